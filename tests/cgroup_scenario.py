"""Real memory cgroups (v1, writable on the test machine) and scenario hosts for the
layouts it cannot produce (v2, other hybrids): an sshd whose sessions run in a private
mount namespace with files bound over /sys/fs/cgroup and /proc files."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

V1_MEMORY = Path("/sys/fs/cgroup/memory")
HOLDER = Path(__file__).with_name("memory_holder.py")


def write_tree(base: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (relative path -> content) under ``base``."""
    for relative, content in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return base


def scenario_command(root: Path, binds: Mapping[str, Path]) -> str:
    """A ForceCommand that binds each source over its target (``{target: source}``) in a
    private mount namespace, then runs what the client asked for."""
    root.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{source} {target}\n" for target, source in binds.items())
    (root / "binds").write_text(lines)
    wrapper = root / "enter-scenario.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        "exec unshare -m --propagation private /bin/sh -c '\n"
        '  while read -r source target; do mount --bind "$source" "$target" || exit 97; '
        'done <"$0"\n'
        '  exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\' ' + str(root / "binds") + "\n"
    )
    wrapper.chmod(0o755)
    return str(wrapper)


class Holder:
    """A running ``memory_holder.py`` in a v1 memory cgroup of its own."""

    def __init__(self, cgroup: Path, marker: str) -> None:
        self.cgroup = cgroup
        self.process = subprocess.Popen(
            [sys.executable, str(HOLDER), marker, str(cgroup)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.read() == "ready"

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def read(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def ask(self, command: str) -> str:
        self.send(command)
        return self.read()

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()


@contextlib.contextmanager
def memory_cgroup(name: str, limit_bytes: int | None = None) -> Iterator[Path]:
    """A fresh v1 memory cgroup named ``name-<pid>``, removed afterwards."""
    path = V1_MEMORY / f"{name}-{os.getpid()}"
    path.mkdir()
    try:
        if limit_bytes is not None:
            (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
        yield path
    finally:
        path.rmdir()


def v1_memory_writable() -> bool:
    return os.access(V1_MEMORY, os.W_OK) and (V1_MEMORY / "memory.limit_in_bytes").exists()
