"""N real sshd hosts on loopback for the fleet bench, each in its own PID, UTS and mount
namespace (``unshare``): a host sees only its own processes and has its own hostname, so
what a host's script prints (and costs) does not grow with N. /tmp stays shared: give each
run on a host its own ``TMPDIR``.

The hosts share one client key, one known_hosts and one empty ssh_config (tests/fleet.py).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.fleet import Fleet, fleet

USER = os.environ.get("USER", "root")


def namespaced(name: str) -> tuple[str, ...]:
    """The wrapper that starts one host's sshd as PID 1 of fresh namespaces, named ``name``."""
    if shutil.which("unshare") is None:
        raise SystemExit("the fleet bench needs unshare(1) (util-linux) and root")
    return (
        "unshare", "--pid", "--uts", "--fork", "--mount-proc",
        "/bin/sh", "-c", 'hostname "$0" && exec "$@"', name,
    )  # fmt: skip


@contextmanager
def loopback_fleet(root: Path, hosts: int) -> Iterator[Fleet]:
    with fleet(root) as made:
        began = time.monotonic()
        for number in range(hosts):
            name = f"host-{number:03d}"
            made.add(name, wrapper=namespaced(name))
        print(f"{hosts} namespaced sshd hosts started in {time.monotonic() - began:.1f}s")
        yield made


def trust_ports(made: Fleet, ports: dict[str, int]) -> None:
    """Let the known_hosts trust each host's key at another port too (its forwarder's)."""
    lines = []
    for host in made.hosts:
        assert host.server is not None
        kind, key = host.server.host_key.with_suffix(".pub").read_text().split()[:2]
        lines.append(f"[127.0.0.1]:{ports[host.name]} {kind} {key}\n")
    with made.known_hosts.open("a") as handle:
        handle.writelines(lines)
