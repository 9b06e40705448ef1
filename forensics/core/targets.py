"""Turn what the operator typed into a ``Target``."""

from __future__ import annotations

import re

from forensics.core.errors import UsageError
from forensics.core.models import SshOptions, Target, host_problem

_SPEC = re.compile(
    r"^(?:(?P<user>[^@\s/]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^@\s:/\[\]]+))"
    r"(?::(?P<port>[^:]*))?$"
)


def parse_target(spec: str, ssh: SshOptions | None = None) -> Target:
    """``local``, ``[user@]host[:port]``, ``[user@][v6addr]:port``, or an SSH config alias.

    ``ssh.user`` and ``ssh.port`` (``--user``, ``--port``) win over what the spec says.

    >>> t = parse_target("root@ssh6.vast.ai:17008")
    >>> (t.user, t.host, t.port, t.name)
    ('root', 'ssh6.vast.ai', 17008, 'root@ssh6.vast.ai:17008')
    >>> parse_target("local").is_local
    True
    >>> parse_target("gpu-a:99999")
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: target 'gpu-a:99999': port must be 1..65535, got '99999'
    >>> parse_target("a..b")
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: target 'a..b': not a host name: every dot-separated ...
    """
    settings = (ssh or SshOptions()).model_dump()
    if spec == "local":
        return Target(name="local", **settings)
    match = _SPEC.match(spec.strip())
    if not match:
        raise UsageError(f"target {spec!r}: expected local, [user@]host[:port] or an SSH alias")
    port_text = match["port"]
    if port_text is not None:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise UsageError(f"target {spec!r}: port must be 1..65535, got {port_text!r}")
        settings["port"] = settings["port"] or int(port_text)
    host = match["v6"] or match["host"]
    problem = host_problem(host)
    if problem is not None:
        raise UsageError(f"target {spec!r}: {problem}")
    settings["user"] = settings["user"] or match["user"]
    return Target(name=spec, host=host, **settings)
