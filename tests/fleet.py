"""A fleet of real sshd hosts on loopback for sweep tests: good ones, and the ways a real
host fails (closed port, refused key, changed host key, a session that hangs)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.sshd import SshServer, free_port, keygen


@dataclass
class LoopbackHost:
    name: str
    port: int
    server: SshServer | None = None
    settings: dict[str, object] = field(default_factory=dict)


@dataclass
class Fleet:
    root: Path
    client_key: Path
    known_hosts: Path
    hosts: list[LoopbackHost] = field(default_factory=list)

    def host(self, name: str) -> LoopbackHost:
        return next(host for host in self.hosts if host.name == name)

    def add(
        self,
        name: str,
        *,
        force_command: str | None = None,
        refuse_key: bool = False,
        wrong_host_key: bool = False,
        listening: bool = True,
        wrapper: tuple[str, ...] = (),
        **settings: object,
    ) -> LoopbackHost:
        """Start (or, with ``listening=False``, only reserve a port for) one host."""
        if not listening:
            host = LoopbackHost(name=name, port=free_port(), settings=settings)
            self.hosts.append(host)
            return host
        server = SshServer(
            root=self.root / name, force_command=force_command, wrapper=wrapper
        ).start()
        allowed = keygen(self.root / f"{name}-other_ed25519") if refuse_key else self.client_key
        (server.root / "authorized_keys").write_text(allowed.with_suffix(".pub").read_text())
        presented = server.host_key
        if wrong_host_key:
            presented = keygen(self.root / f"{name}-old_host_ed25519")
        kind, key = presented.with_suffix(".pub").read_text().split()[:2]
        with self.known_hosts.open("a") as handle:
            handle.write(f"[127.0.0.1]:{server.port} {kind} {key}\n")
        host = LoopbackHost(name=name, port=server.port, server=server, settings=settings)
        self.hosts.append(host)
        return host

    def write_inventory(
        self, path: Path, names: Iterable[str] | None = None, **defaults: object
    ) -> Path:
        """An inventory of the chosen hosts (all by default); JSON is YAML too."""
        chosen = [self.host(name) for name in names] if names else self.hosts
        document = {
            "defaults": {
                "user": os.environ.get("USER", "root"),
                "identity": str(self.client_key),
                "known_hosts": str(self.known_hosts),
                "ssh_config": str(self.root / "ssh_config"),
                "connect_timeout": 3,
                **defaults,
            },
            "hosts": [
                {"name": host.name, "host": "127.0.0.1", "port": host.port, **host.settings}
                for host in chosen
            ],
        }
        path.write_text(json.dumps(document, indent=2) + "\n")
        return path

    def stop(self) -> None:
        for host in self.hosts:
            if host.server is not None:
                host.server.stop()


@contextmanager
def fleet(root: Path) -> Iterator[Fleet]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "ssh_config").write_text("# empty on purpose: no user config leaks in\n")
    made = Fleet(
        root=root,
        client_key=keygen(root / "client_ed25519"),
        known_hosts=root / "known_hosts",
    )
    made.known_hosts.touch()
    try:
        yield made
    finally:
        made.stop()
