"""The command line starts instantly: ``--help``, ``collect --help``, ``version`` and a
usage error load neither SSH, nor the templates, nor rich, nor the probes, nor the history
and ticket clients (docs/ARCHITECTURE.md, "Start-up"). Each is run in a fresh interpreter,
as the operator runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli.collect import probe_names
from forensics.probes import PROBES

HEAVY = ("paramiko", "fabric", "invoke", "jinja2", "rich", "yaml", "re2", "httpx", "psycopg")
HEAVY_OURS = ("forensics.probes", "forensics.reports", "forensics.remote", "forensics.judge")

_HEAVY_LOADED = (
    f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}"
    f" or m.startswith({HEAVY_OURS!r})]\n"
)


def _run(program: str) -> object:
    """What ``program``, run in a fresh interpreter, printed last (a repr of our own)."""
    completed = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    return eval(completed.stdout.strip().splitlines()[-1])  # our own repr


def _loaded_after(arguments: list[str]) -> tuple[str, str, int, list[str]]:
    """What ``forensics ARGUMENTS`` printed on stdout and stderr, its exit status, and the
    heavy modules it had loaded."""
    program = (
        "import sys, io, contextlib\n"
        f"sys.argv = ['forensics', *{arguments!r}]\n"
        "import forensics.cli\n"
        "from forensics.cli.entry import main\n"
        "out, err, status = io.StringIO(), io.StringIO(), 0\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        "    try:\n        main()\n    except SystemExit as stop:\n"
        "        status = int(stop.code or 0)\n"
        + _HEAVY_LOADED
        + "print(repr((out.getvalue(), err.getvalue(), status, sorted(heavy))))\n"
    )
    printed, said, status, heavy = _run(program)  # type: ignore[misc]
    return printed, said, status, heavy


@pytest.mark.parametrize(
    "arguments",
    [["--help"], ["collect", "--help"], ["sweep", "--help"], ["version"], ["--version"]],
)
def test_help_and_version_load_no_ssh_templates_rich_or_probes(arguments: list[str]) -> None:
    printed, _, status, heavy = _loaded_after(arguments)
    assert printed.strip(), f"forensics {' '.join(arguments)} printed nothing"
    assert status == 0
    assert heavy == []


@pytest.mark.parametrize(
    "arguments",
    [
        ["collect", "--timeout", "nope"],
        ["sweep", "--grace", "nope"],
        ["arm", "--for", "nope"],
        ["collect", "--no-such-option"],
    ],
)
def test_a_usage_error_is_one_line_before_anything_heavy_loads(arguments: list[str]) -> None:
    printed, said, status, heavy = _loaded_after(arguments)
    assert (printed, status) == ("", 2)
    assert said.startswith("forensics: ") and said.count("\n") == 1
    assert heavy == []


# Imported by the commands' bodies, never at start-up: the machinery of collect/analyze's
# output and of lint-script.
_MACHINERY = {"host_output", "lint_files"}


def test_every_command_module_declares_its_options_without_its_machinery() -> None:
    cli = Path(__file__).parent.parent / "forensics" / "cli"
    names = sorted(
        f"forensics.cli.{path.stem}"
        for path in cli.glob("*.py")
        if path.stem not in _MACHINERY | {"__init__"}
    )
    assert "forensics.cli.sweep" in names and "forensics.cli.arm" in names
    program = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n    importlib.import_module(name)\n"
        + _HEAVY_LOADED
        + "print(repr(sorted(heavy)))\n"
    )
    assert _run(program) == []


def test_collect_help_lists_every_host_probe_without_importing_them() -> None:
    on_the_host = sorted(probe.name for probe in PROBES if not probe.client_sections)
    assert probe_names() == on_the_host
    printed, _, _, _ = _loaded_after(["collect", "--help"])
    flat = " ".join(printed.split())
    assert ", ".join(on_the_host) in flat
