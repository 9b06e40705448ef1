"""What a sweep would fail on, found before it runs: for each host of an inventory, the
files its connection needs and the name it connects to, checked on this machine only
(nothing is sent anywhere: names are looked up in the SSH config and /etc/hosts, never in
DNS).

>>> from forensics.core.models import Target
>>> problems(Target(name="a", host="10.0.0.5", identity="/nonexistent/key"))
['identity file /nonexistent/key does not exist']
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from forensics.core.errors import UsageError
from forensics.core.models import Target
from forensics.remote.ssh_config import resolve

HOSTS_FILE = Path("/etc/hosts")


def problems(target: Target, hosts_file: Path = HOSTS_FILE) -> list[str]:
    """Why connecting to ``target`` would fail before any packet is sent, in words."""
    if target.is_local or target.host is None:
        return []
    said: list[str] = []
    for label, value in (("identity file", target.identity), ("known_hosts", target.known_hosts)):
        if value:
            said += _file_problem(label, Path(value).expanduser())
    if target.ssh_config and not Path(target.ssh_config).expanduser().is_file():
        return [*said, f"SSH config {target.ssh_config} does not exist"]
    try:
        settings = resolve(
            target.host,
            config=Path(target.ssh_config).expanduser() if target.ssh_config else None,
            user=target.user,
            port=target.port,
            proxy_jump=target.proxy_jump,
        )
    except UsageError as error:
        return [*said, str(error)]
    if not target.identity and settings.identity_files_given:
        found = [path for path in settings.identity_paths() if path.is_file()]
        if not found:
            listed = ", ".join(str(path) for path in settings.identity_paths())
            said.append(f"none of the SSH config's identity files exists ({listed})")
    if not _resolvable(settings.hostname, hosts_file):
        said.append(
            f"{settings.hostname!r} looks like an SSH config alias, but the config gives it "
            "no HostName and /etc/hosts does not name it (add a Host block, or use an address)"
        )
    return said


def _file_problem(label: str, path: Path) -> list[str]:
    if not path.exists():
        return [f"{label} {path} does not exist"]
    if not path.is_file():
        return [f"{label} {path} is not a file"]
    if not os.access(path, os.R_OK):
        return [f"{label} {path} is not readable by this user"]
    return []


def _resolvable(name: str, hosts_file: Path) -> bool:
    """A name with a dot is left to DNS at sweep time; an address, ``localhost`` or a
    name in /etc/hosts resolves here; a bare word that none of these knows does not."""
    if "." in name or name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        lines = hosts_file.read_text(errors="replace").splitlines()
    except OSError:
        return True
    for line in lines:
        words = line.split("#", 1)[0].split()
        if name in words[1:]:
            return True
    return False
