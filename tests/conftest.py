from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sshd import SshServer, sshd_available


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(
    *args: str,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> CliResult:
    """Run the real ``forensics`` command line in a child process."""
    completed = subprocess.run(
        [sys.executable, "-m", "forensics", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (apt-get install openssh-server)")
    server = SshServer(root=tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def make_sshd(tmp_path: Path) -> Iterator[type[SshServer]]:
    """Start extra servers (scenario hosts, ForceCommand wrappers); all stopped afterwards."""
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (apt-get install openssh-server)")
    started: list[SshServer] = []

    def factory(**kwargs: object) -> SshServer:
        root = tmp_path / f"sshd{len(started)}"
        server = SshServer(root=root, **kwargs).start()  # type: ignore[arg-type]
        started.append(server)
        return server

    yield factory  # type: ignore[misc]
    for server in started:
        server.stop()
