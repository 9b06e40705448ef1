"""Text output follows the terminal it runs in: at 80 columns nothing is cut (cells wrap),
at 200 the tables use the room; headers are never truncated. Run through a real pty."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.test_sweep_report import _report

ROOT = Path(__file__).parent.parent


def _in_terminal(columns: int, *args: str) -> str:
    """Run ``forensics ARGS`` with a pty of ``columns`` columns as its terminal."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    child = subprocess.Popen(
        [sys.executable, "-m", "forensics", *args],
        stdin=terminal, stdout=terminal, stderr=terminal, env=env, cwd=ROOT,
    )  # fmt: skip
    os.close(terminal)
    chunks = []
    while True:
        try:
            data = os.read(controller, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert child.wait(timeout=120) == 0, b"".join(chunks).decode(errors="replace")
    os.close(controller)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("width")
    fleet = root / "fleet.json"
    fleet.write_text(_report().model_dump_json())
    result = run_cli(
        "collect", "local", "--probe", "system", "--probe", "memory", "--out", str(root),
        "-f", "json", "--fail-on", "never",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return {"fleet": fleet, "bundle": Path(json.loads(result.stdout)["bundle"])}


@pytest.mark.parametrize("columns", [80, 200])
def test_tables_fit_the_terminal_and_keep_their_headers(
    columns: int, saved: dict[str, Path]
) -> None:
    screens = {
        "inventory": (
            _in_terminal(columns, "inventory", "check", "inventory.yaml"),
            ("host", "group", "address", "via", "sudo", "timeout", "probes", "focus", "line"),
        ),
        "fleet": (
            _in_terminal(columns, "report", str(saved["fleet"]), "-f", "text"),
            ("standing", "host", "status", "time", "headline"),
        ),
        "host": (_in_terminal(columns, "report", str(saved["bundle"]), "-f", "text"), ()),
    }
    for name, (screen, headers) in screens.items():
        # stderr shares the terminal: its one-line warnings wrap there, as any line does
        shown = [line for line in screen.splitlines() if not line.startswith("forensics: ")]
        widest = max(len(line) for line in shown)
        assert widest <= columns, (name, widest)
        if headers:
            assert any(all(h in line for h in headers) for line in screen.splitlines()), name
        assert "…" not in screen, name
    inventory = screens["inventory"][0]
    if columns == 200:
        assert "root@ssh4.vast.ai:31874" in inventory, "a wide terminal needs no wrapping"
    else:
        assert "root@ssh4.vast.ai:31874" not in inventory and "31874" in inventory


def test_version_is_an_option_as_well_as_a_command() -> None:
    for args in (("--version",), ("version",)):
        result = run_cli(*args)
        assert result.exit_code == 0 and result.stdout.startswith("forensics "), args
