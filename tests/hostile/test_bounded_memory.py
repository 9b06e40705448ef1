"""Whatever a host sends, the tool's memory stays bounded: ``collect`` runs in a child
process whose address space is capped (``RLIMIT_AS``) far below what the host sends, and
still ends within its deadline with one line."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.crafted import (
    SLACK_S,
    assert_one_inert_line,
    crafted_host,
    manifest,
    only_bundle,
)
from tests.sshd import SshServer

MakeSshd = Callable[..., SshServer]
ADDRESS_SPACE = 768 << 20
"""Python, paramiko's thread, the caps of every section (about 40 MiB) and room to spare;
the host below sends many times more."""

_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
sys.argv = ["forensics", *sys.argv[1:]]
from forensics.cli.app import main
main()
"""


@pytest.mark.parametrize(
    ("stream", "body", "says"),
    [
        ("stdout", "exec cat /dev/zero", "bytes the script can write on stdout"),
        ("stdout", 'exec yes "$(printf \'\\n%s START system\' "$n")"', "bytes the script"),
        ("stderr", "exec cat /dev/zero >&2", "deadline passed"),
    ],
)
def test_an_endless_stream_keeps_memory_bounded_and_the_deadline(
    make_sshd: MakeSshd, tmp_path: Path, stream: str, body: str, says: str
) -> None:
    host = crafted_host(make_sshd, tmp_path, body)
    started = time.monotonic()
    completed = subprocess.run(
        [
            sys.executable, "-c", _CHILD.format(limit=ADDRESS_SPACE), "collect",
            *host.target_args(), "--out", str(tmp_path / "out"), "--timeout", "8",
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert time.monotonic() - started < 8 + SLACK_S
    assert completed.returncode == 3, completed.stderr
    assert says in assert_one_inert_line(completed.stderr)
    recorded = manifest(only_bundle(tmp_path / "out"))[f"run_{stream}"]
    assert recorded["truncated"] and recorded["bytes_kept"] == recorded["cap"]  # type: ignore[index]
