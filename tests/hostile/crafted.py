"""A hostile host over real SSH: an sshd whose ForceCommand ignores the script it is sent
and answers with a crafted stream instead, and the checks every hostile test makes."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import CliResult, run_cli
from tests.scenario import write_executable
from tests.sshd import SshServer

# The run's nonce, read from the script the client sent (base64 inside the exec command),
# so that the crafted stream can forge frames the reader would take as real.
_NONCE = (
    'n=$(printf %s "$SSH_ORIGINAL_COMMAND" | sed "s/^echo \\([^|]*\\)|.*/\\1/" | base64 -d '
    '| sed -n "s/^_fx_n=//p" | tr -d "\'")\n'
)
# What a terminal would obey: ESC, C1 controls (raw or UTF-8 encoded), bidi controls.
RAW_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
# What a deadline may be overrun by in these tests: starting and ending a Python process
# (imports, analysis, writing the bundle) on a machine busy with other tests.
SLACK_S = 6.0
OSC_52 = "\\033]52;c;aGFja2Vk\\007"
OSC_0 = "\\033]0;owned\\007"
BIDI = "\\342\\200\\256"  # U+202E RIGHT-TO-LEFT OVERRIDE in UTF-8, as printf writes it


def crafted_host(make_sshd: Callable[..., SshServer], root: Path, body: str) -> SshServer:
    """An sshd whose every session runs ``body`` (POSIX sh, ``$n`` = the run's nonce)."""
    wrapper = write_executable(root / "crafted.sh", "#!/bin/sh\n" + _NONCE + body + "\n")
    return make_sshd(force_command=f"/bin/sh {wrapper}")


@dataclass
class Timed:
    result: CliResult
    seconds: float


def timed_cli(*args: str, timeout: float = 120) -> Timed:
    started = time.monotonic()
    result = run_cli(*args, timeout=timeout)
    return Timed(result, time.monotonic() - started)


def assert_one_inert_line(stderr: str) -> str:
    """Exactly one line on stderr, none of it a control a terminal would obey."""
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr[:2000]
    assert not RAW_CONTROL.search(stderr.rstrip("\n")), ascii(stderr[:2000])
    assert len(stderr) < 4096, len(stderr)
    return stderr


def assert_inert(text: str) -> None:
    found = RAW_CONTROL.search(text.replace("\n", "").replace("\t", ""))
    assert found is None, ascii(text[max(0, found.start() - 80) : found.start() + 80])


def only_bundle(out: Path) -> Path:
    """The one bundle under ``out``, complete: a manifest, a script, nothing half-written."""
    bundles = [p for p in out.glob("*/*") if p.is_dir()]
    assert len(bundles) == 1, bundles
    bundle = bundles[0]
    assert not bundle.name.startswith(".incomplete"), bundle
    assert (bundle / "manifest.json").is_file() and (bundle / "script.sh").is_file()
    return bundle


def manifest(bundle: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((bundle / "manifest.json").read_text())
    return loaded


@contextmanager
def silent_listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts connections and never says a word (an SSH
    server stalled before its banner); yields its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        server.close()
