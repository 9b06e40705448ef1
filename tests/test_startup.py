"""The command line starts instantly: ``--help``, ``collect --help`` and ``version`` load
neither SSH, nor the templates, nor rich, nor the probes (docs/ARCHITECTURE.md, "Start-up").
Each is run in a fresh interpreter, as the operator runs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from forensics.cli.collect import _probe_names
from forensics.probes import PROBES

HEAVY = ("paramiko", "fabric", "invoke", "jinja2", "rich", "yaml", "re2")
HEAVY_OURS = ("forensics.probes", "forensics.reports", "forensics.remote", "forensics.judge")


def _loaded_after(arguments: list[str]) -> tuple[str, list[str]]:
    """What ``forensics ARGUMENTS`` printed, and the heavy modules it had loaded."""
    probe = (
        "import sys, io, contextlib\n"
        f"sys.argv = ['forensics', *{arguments!r}]\n"
        "import forensics.cli\n"
        "from forensics.cli.entry import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}"
        f" or m.startswith({HEAVY_OURS!r})]\n"
        "print(repr((out.getvalue(), sorted(heavy))))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    printed, heavy = eval(completed.stdout.strip().splitlines()[-1])  # our own repr
    return printed, heavy


# forensics/cli/arm.py (the flight recorder, merged last) still imports rich, the reports,
# SSH and every probe at module level, and its options' help is built from PROBES and the
# recorder's EVENT_KINDS; until it loads them in its body as the other commands do, these
# fail, and strict xfail says so the day it is fixed.
_ARM_STILL_EAGER = pytest.mark.xfail(
    strict=True, reason="forensics/cli/arm.py imports its machinery at module level"
)


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(arguments, marks=_ARM_STILL_EAGER)
        for arguments in (
            ["--help"],
            ["collect", "--help"],
            ["sweep", "--help"],
            ["version"],
            ["--version"],
        )
    ],
)
def test_help_and_version_load_no_ssh_templates_rich_or_probes(arguments: list[str]) -> None:
    printed, heavy = _loaded_after(arguments)
    assert printed.strip(), f"forensics {' '.join(arguments)} printed nothing"
    assert heavy == []


def test_collect_help_lists_every_host_probe_without_importing_them() -> None:
    on_the_host = sorted(probe.name for probe in PROBES if not probe.client_sections)
    assert _probe_names() == on_the_host
    printed, _ = _loaded_after(["collect", "--help"])
    flat = " ".join(printed.split())
    assert ", ".join(on_the_host) in flat
