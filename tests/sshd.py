"""A real OpenSSH server on loopback for the tests: generated host and client keys, a
known_hosts that trusts it, and optional ForceCommand wrappers for scenario hosts."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def keygen(path: Path, kind: str = "ed25519") -> Path:
    if not path.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "forensics-test", "-f", str(path)],
            check=True,
        )
    return path


@dataclass
class SshServer:
    """One sshd process. ``target_args`` are the CLI options that reach it."""

    root: Path
    port: int = field(default_factory=free_port)
    force_command: str | None = None
    extra_config: str = ""
    # Run sshd under this command (e.g. ``unshare`` into its own namespaces); it must end
    # by exec'ing its arguments.
    wrapper: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    @property
    def host_key(self) -> Path:
        return self.root / "host_ed25519"

    @property
    def client_key(self) -> Path:
        return self.root / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def target(self) -> str:
        return f"{os.environ.get('USER', 'root')}@127.0.0.1:{self.port}"

    def target_args(self) -> list[str]:
        return [
            self.target,
            "--identity",
            str(self.client_key),
            "--known-hosts",
            str(self.known_hosts),
            "--ssh-config",
            str(self.root / "ssh_config"),
        ]

    def start(self) -> SshServer:
        self.root.mkdir(parents=True, exist_ok=True)
        keygen(self.host_key)
        keygen(self.client_key)
        Path("/run/sshd").mkdir(exist_ok=True)
        (self.root / "authorized_keys").write_text(
            (self.client_key.with_suffix(".pub")).read_text()
        )
        (self.root / "ssh_config").write_text("# empty on purpose: no user config leaks in\n")
        public = self.host_key.with_suffix(".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n")
        config = [
            f"ListenAddress 127.0.0.1:{self.port}",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            f"PidFile {self.root / 'sshd.pid'}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "LogLevel VERBOSE",
            "MaxStartups 100:30:200",
        ]
        if self.force_command:
            config.append(f"ForceCommand {self.force_command}")
        config.append(self.extra_config)
        (self.root / "sshd_config").write_text("\n".join(config) + "\n")
        log = (self.root / "sshd.log").open("ab")
        self.process = subprocess.Popen(
            [*self.wrapper, SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.root / 'sshd.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    if sock.recv(8).startswith(b"SSH-"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start within 10 s")

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None


def sshd_available() -> bool:
    return Path(SSHD).exists() and shutil.which("ssh-keygen") is not None
