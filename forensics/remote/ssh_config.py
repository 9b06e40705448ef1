"""OpenSSH's client configuration, read as ``ssh`` reads it, for the keywords this tool
acts on: which address, user, port, keys, known_hosts files, host-key checking and jump
hosts a target resolves to.

The rules follow ssh_config(5): the command line first, then the user's file, then the
system's; for each keyword the first value obtained wins (``IdentityFile`` and
``CertificateFile`` accumulate); ``Host`` patterns match the name as typed, ``Match host``
the name after ``HostName``; ``Include`` reads files (globs, relative to ``~/.ssh`` or
``/etc/ssh``) in place, under the block it sits in; ``Match final`` asks for a second pass.
``Match exec`` is never run (the tool does not execute what a config file says): it does
not match, and the explanation says so.

A sample, the kind of file people keep for a fleet::

    Host gpu-* !gpu-skip
      HostName %h.fleet.example
      User root
      IdentityFile ~/.ssh/fleet_ed25519
      UserKnownHostsFile ~/.ssh/known_hosts.d/%h
      StrictHostKeyChecking accept-new
      ProxyJump bastion

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "config"
>>> _ = path.write_text("Host gpu-*\\n  HostName %h.fleet.example\\n  Port 2222\\n"
...                     "  StrictHostKeyChecking accept-new\\n  ProxyJump ops@bastion:22\\n")
>>> settings = resolve("gpu-a", config=path, local_user="alice", home="/home/alice")
>>> settings.hostname, settings.port, settings.user, settings.strict_host_key_checking
('gpu-a.fleet.example', 2222, 'alice', 'accept-new')
>>> [str(hop) for hop in settings.jumps()]
['ops@bastion:22']
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import socket
from dataclasses import dataclass, field
from pathlib import Path

from forensics.core.errors import UsageError

SYSTEM_CONFIG = Path("/etc/ssh/ssh_config")
DEFAULT_IDENTITIES = (
    "~/.ssh/id_rsa",
    "~/.ssh/id_ecdsa",
    "~/.ssh/id_ecdsa_sk",
    "~/.ssh/id_ed25519",
    "~/.ssh/id_ed25519_sk",
    "~/.ssh/id_xmss",
    "~/.ssh/id_dsa",
)
DEFAULT_USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
_MAX_INCLUDE_DEPTH = 16
# ssh follows a jump host's own ProxyJump without end; a config loop would never finish.
MAX_JUMPS = 8
_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)(?:\s*=\s*|\s+)(.*)$")
_ACCUMULATE = frozenset({"identityfile", "certificatefile"})
_MULTI_VALUE = frozenset({"userknownhostsfile", "globalknownhostsfile"})
_KNOWN = frozenset(
    {
        "hostname", "user", "port", "identityfile", "identitiesonly", "identityagent",
        "certificatefile", "userknownhostsfile", "globalknownhostsfile", "hostkeyalias",
        "stricthostkeychecking", "proxyjump", "proxycommand", "connecttimeout",
        "serveraliveinterval",
    }
)  # fmt: skip
_STRICT = {
    "yes": "true",
    "true": "true",
    "no": "false",
    "false": "false",
    "off": "false",
    "ask": "ask",
    "accept-new": "accept-new",
}


@dataclass(frozen=True)
class Jump:
    """One ``ProxyJump`` hop: ``[user@]host[:port]``."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        where = f"{host}:{self.port}" if self.port else host
        return f"{self.user}@{where}" if self.user else where

    def as_ssh_prints(self) -> str:
        """As ``ssh -G`` writes a hop: a port puts the host in brackets."""
        where = f"[{self.host}]:{self.port}" if self.port else self.host
        return f"{self.user}@{where}" if self.user else where


@dataclass
class SshSettings:
    """What one host resolves to. Paths that ssh keeps unexpanded in ``ssh -G``
    (identity and certificate files) are kept as written; ``expand`` gives the real path."""

    host: str
    hostname: str
    user: str
    port: int
    local_user: str
    home: str
    identity_files: list[str]
    identity_files_given: bool
    identities_only: bool
    identity_agent: str | None
    certificate_files: list[str]
    user_known_hosts_files: list[str]
    global_known_hosts_files: list[str]
    host_key_alias: str | None
    strict_host_key_checking: str
    proxy_jump: str | None
    proxy_command: str | None
    connect_timeout: int | None
    server_alive_interval: int
    files_read: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def expand(self, text: str) -> str:
        """``~`` and the ``%`` tokens of ssh_config(5) that a path may hold."""
        return expand_tokens(
            text,
            {
                "%": "%",
                "h": self.hostname,
                "n": self.host,
                "p": str(self.port),
                "r": self.user,
                "u": self.local_user,
                "d": self.home,
                "i": str(os.getuid()),
                "k": self.host_key_alias or self.host,
                "l": socket.gethostname(),
                "L": socket.gethostname().split(".")[0],
            },
            self.home,
        )

    def identity_paths(self) -> list[Path]:
        return [Path(self.expand(p)) for p in self.identity_files]

    def certificate_paths(self) -> list[Path]:
        return [Path(self.expand(p)) for p in self.certificate_files]

    def known_hosts_paths(self) -> list[Path]:
        return [Path(p) for p in (*self.user_known_hosts_files, *self.global_known_hosts_files)]

    def jumps(self) -> list[Jump]:
        if not self.proxy_jump or self.proxy_jump.lower() == "none":
            return []
        return [parse_jump(hop) for hop in self.proxy_jump.split(",") if hop.strip()]

    def ssh_g_lines(self) -> list[str]:
        """The lines ``ssh -G HOST`` prints for these keywords, in its spelling."""
        lines = [
            f"host {self.host}",
            f"user {self.user}",
            f"hostname {self.hostname}",
            f"port {self.port}",
            f"identitiesonly {'yes' if self.identities_only else 'no'}",
            f"stricthostkeychecking {self.strict_host_key_checking}",
            f"serveraliveinterval {self.server_alive_interval}",
        ]
        if self.host_key_alias:
            lines.append(f"hostkeyalias {self.host_key_alias}")
        if self.identity_agent:
            lines.append(f"identityagent {self.identity_agent}")
        lines += [f"identityfile {path}" for path in self.identity_files]
        lines += [f"certificatefile {path}" for path in self.certificate_files]
        lines.append("globalknownhostsfile " + " ".join(self.global_known_hosts_files))
        lines.append("userknownhostsfile " + " ".join(self.user_known_hosts_files))
        lines.append(f"connecttimeout {self.connect_timeout if self.connect_timeout else 'none'}")
        if self.proxy_jump and self.proxy_jump.lower() != "none":
            lines.append("proxyjump " + ",".join(j.as_ssh_prints() for j in self.jumps()))
        elif self.proxy_command and self.proxy_command.lower() != "none":
            lines.append(f"proxycommand {self.proxy_command}")
        return lines


def expand_tokens(text: str, tokens: dict[str, str], home: str) -> str:
    """Replace ``%x`` tokens and a leading ``~``; an unknown token is an error, as in ssh.

    >>> expand_tokens("~/.ssh/id_%r@%h", {"r": "root", "h": "gpu-a", "%": "%"}, "/root")
    '/root/.ssh/id_root@gpu-a'
    """
    if text.startswith("~/") or text == "~":
        text = home + text[1:]
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "%" and index + 1 < len(text):
            token = text[index + 1]
            if token not in tokens:
                raise UsageError(f"ssh config: unknown token %{token} in {text!r}")
            out.append(tokens[token])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def parse_jump(text: str) -> Jump:
    """``[user@]host[:port]`` or ``[user@][v6]:port``, as ``ssh -J`` takes a hop.

    >>> parse_jump("ops@[::1]:2201"), parse_jump("bastion")
    (Jump(host='::1', user='ops', port=2201), Jump(host='bastion', user=None, port=None))
    """
    text = text.strip()
    user = None
    if "@" in text:
        user, text = text.rsplit("@", 1)
    port: int | None = None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest.startswith(":"):
            port = _port(rest[1:], text)
    elif text.count(":") == 1:
        host, port_text = text.split(":")
        port = _port(port_text, text)
    else:
        host = text
    if not host:
        raise UsageError(f"ProxyJump hop {text!r}: no host")
    return Jump(host=host, user=user or None, port=port)


def _port(text: str, where: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise UsageError(f"{where!r}: port must be 1..65535, got {text!r}")
    return int(text)


@dataclass
class _Pass:
    """The state of one reading pass: what is set so far, first value winning."""

    host: str
    local_user: str
    home: str
    final: bool
    values: dict[str, list[str]]
    files_read: list[str]
    notes: list[str]

    def current_hostname(self) -> str:
        given = self.values.get("hostname")
        if not given:
            return self.host
        return expand_tokens(given[0], {"h": self.host, "%": "%"}, self.home).lower()

    def current_user(self) -> str:
        given = self.values.get("user")
        return given[0] if given else self.local_user


def resolve(
    host: str,
    *,
    config: Path | None = None,
    user: str | None = None,
    port: int | None = None,
    proxy_jump: str | None = None,
    local_user: str | None = None,
    home: str | None = None,
) -> SshSettings:
    """Resolve ``host`` as ``ssh -G host`` would, with ``config`` as ``-F`` (else the
    user's ``~/.ssh/config`` and the system's ``/etc/ssh/ssh_config``); ``user``, ``port``
    and ``proxy_jump`` act as ``-l``, ``-p`` and ``-J`` (they win over the files)."""
    local_user = local_user or _local_user()
    home = home or str(Path.home())
    host = host.lower()
    files = (
        [config]
        if config is not None
        else [p for p in (Path(home) / ".ssh" / "config", SYSTEM_CONFIG) if p.is_file()]
    )
    if config is not None and not config.is_file():
        raise UsageError(f"SSH config file not found: {config}")
    values: dict[str, list[str]] = {}
    if user:
        values["user"] = [user]
    if port:
        values["port"] = [str(port)]
    if proxy_jump:
        values["proxyjump"] = [proxy_jump]
    state = _Pass(host, local_user, home, False, values, [], [])
    wants_final = False
    for path in files:
        wants_final |= _read(path, state, depth=0, system=path == SYSTEM_CONFIG)
    if wants_final:
        state.final = True
        for path in files:
            _read(path, state, depth=0, system=path == SYSTEM_CONFIG)
    return _settings(state)


@dataclass
class JumpChain:
    """The jump hosts in the order they are connected, each resolved as ssh resolves it,
    and the ProxyCommand that reaches the first of them (None: a direct connection)."""

    hops: list[SshSettings]
    first_command: str | None = None


def jump_chain(settings: SshSettings, config: Path | None) -> JumpChain:
    """How ssh reaches ``settings``' jump hosts. ssh turns ``ProxyJump a,b`` into ``ssh -J a
    -W HOST:PORT b``: b is given its jump on the command line, so its own ProxyJump is not
    read, while a is a plain ``ssh a``, so the jump hosts (or the ProxyCommand) that the
    config names for a come before it, and the same again for the first of those. Jump
    hosts that lead back to one already on the way are a loop, refused in one line.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "config"
    >>> _ = path.write_text("Host gpu-a\\n  ProxyJump bastion-b\\n"
    ...                     "Host bastion-b\\n  ProxyJump edge,bastion-a\\n"
    ...                     "Host edge\\n  ProxyCommand nc -X 5 -x proxy:1080 %h %p\\n")
    >>> chain = jump_chain(resolve("gpu-a", config=path), path)
    >>> [hop.host for hop in chain.hops], chain.first_command
    (['edge', 'bastion-a', 'bastion-b'], 'nc -X 5 -x proxy:1080 edge 22')
    """
    hops: list[SshSettings] = []
    jumps = settings.jumps()
    named = len(jumps)
    first_command: str | None = None
    seen = {(settings.hostname, settings.port)}
    while jumps:
        first, *rest = jumps
        head = resolve(first.host, config=config, user=first.user, port=first.port)
        given = [
            resolve(hop.host, config=config, user=hop.user, port=hop.port, proxy_jump="none")
            for hop in rest
        ]
        hops[:0] = [head, *given]
        where = (head.hostname, head.port)
        if where == (settings.hostname, settings.port) and len(hops) == named:
            break  # the destination names itself as a hop: the caller says so, naming it
        if where in seen or len(hops) > MAX_JUMPS:
            path = " -> ".join(f"{hop.host} ({hop.hostname}:{hop.port})" for hop in hops)
            raise UsageError(
                f"ProxyJump: jump host loop via {head.host}: the config's ProxyJump for it "
                f"leads back to it, and ssh would never connect either ({path} -> "
                f"{settings.host}); give it 'ProxyJump none' or leave it out of the Host "
                "pattern that names it"
            )
        seen.update((hop.hostname, hop.port) for hop in hops)
        jumps = head.jumps()
        if not jumps and head.proxy_command and head.proxy_command.lower() != "none":
            first_command = head.expand(head.proxy_command)
    return JumpChain(hops, first_command)


def _local_user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER", "root")


def _read(path: Path, state: _Pass, depth: int, system: bool) -> bool:
    """Apply one file; True when it holds a ``Match final`` or ``canonical`` block."""
    if depth > _MAX_INCLUDE_DEPTH:
        raise UsageError(f"{path}: Include nested more than {_MAX_INCLUDE_DEPTH} deep")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise UsageError(f"cannot read SSH config {path} ({error.strerror})") from error
    if str(path) not in state.files_read:
        state.files_read.append(str(path))
    active = True
    wants_final = False
    for number, raw in enumerate(text.splitlines(), start=1):
        words = _words(raw, path, number)
        if not words:
            continue
        keyword, args = words[0].lower(), words[1:]
        if keyword == "host":
            active = _host_matches(state.host, args)
            continue
        if keyword == "match":
            active, final = _match(args, state, path, number)
            wants_final |= final
            continue
        if not active:
            continue
        if keyword == "include":
            for pattern in args:
                wants_final |= _include(pattern, state, depth, system)
            continue
        if keyword not in _KNOWN or not args:
            continue
        if keyword in _ACCUMULATE:
            state.values.setdefault(keyword, []).append(args[0])
        elif keyword not in state.values and not _exclusive_taken(keyword, state):
            state.values[keyword] = args if keyword in _MULTI_VALUE else [args[0]]
    return wants_final


def _exclusive_taken(keyword: str, state: _Pass) -> bool:
    # ProxyJump and ProxyCommand are one setting: whichever comes first wins.
    pair = {"proxyjump": "proxycommand", "proxycommand": "proxyjump"}
    return keyword in pair and pair[keyword] in state.values


def _include(pattern: str, state: _Pass, depth: int, system: bool) -> bool:
    expanded = expand_tokens(pattern, {"%": "%"}, state.home)
    if not expanded.startswith("/"):
        base = "/etc/ssh" if system else f"{state.home}/.ssh"
        expanded = f"{base}/{expanded}"
    found = False
    for name in sorted(glob.glob(expanded)):
        found |= _read(Path(name), state, depth + 1, system)
    return found


def _words(line: str, path: Path, number: int) -> list[str]:
    """A line as keyword and arguments: ``Keyword value``, ``Keyword=value`` or
    ``Keyword = value``; double quotes group, ``#`` starts a comment."""
    match = _LINE.match(line)
    if match is None:
        return []
    keyword, rest = match.groups()
    if keyword.lower() == "proxycommand":
        # The rest of the line is one command for a shell, quotes and all.
        return [keyword, rest.strip()]
    try:
        return [keyword, *shlex.split(rest, comments=True, posix=True)]
    except ValueError as error:
        raise UsageError(f"{path}:{number}: cannot read this line ({error})") from error


def wildcard_matches(name: str, pattern: str) -> bool:
    """ssh's wildcards: ``*`` and ``?`` only (``[`` is literal, as in ``[host]:port``),
    without regard to case.

    >>> wildcard_matches("[gpu-a]:2222", "[gpu-*]:2222"), wildcard_matches("gpu-a", "GPU-?")
    (True, True)
    """
    regex = "".join(
        ".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern
    )
    return re.fullmatch(regex, name, flags=re.IGNORECASE | re.DOTALL) is not None


def _pattern_list_matches(name: str, patterns: list[str]) -> bool:
    """ssh's pattern lists: some positive pattern matches and no negated one does."""
    matched = False
    for pattern in (p for group in patterns for p in group.split(",") if p):
        negated = pattern.startswith("!")
        if wildcard_matches(name, pattern[1:] if negated else pattern):
            if negated:
                return False
            matched = True
    return matched


def _host_matches(host: str, patterns: list[str]) -> bool:
    return _pattern_list_matches(host, patterns)


def _match(args: list[str], state: _Pass, path: Path, number: int) -> tuple[bool, bool]:
    result = True
    wants_final = False
    index = 0
    while index < len(args):
        criterion = args[index].lower()
        negated = criterion.startswith("!")
        criterion = criterion.lstrip("!")
        if criterion == "all":
            matched = True
            index += 1
        elif criterion in ("final", "canonical"):
            wants_final = True
            matched = state.final
            index += 1
        else:
            if index + 1 >= len(args):
                raise UsageError(f"{path}:{number}: Match {criterion} needs an argument")
            argument = args[index + 1]
            index += 2
            if criterion == "host":
                matched = _pattern_list_matches(state.current_hostname(), [argument])
            elif criterion == "originalhost":
                matched = _pattern_list_matches(state.host, [argument])
            elif criterion == "user":
                matched = _pattern_list_matches(state.current_user(), [argument])
            elif criterion == "localuser":
                matched = _pattern_list_matches(state.local_user, [argument])
            elif criterion == "exec":
                note = f"{path}:{number}: Match exec is not run by this tool; treated as no match"
                if note not in state.notes:
                    state.notes.append(note)
                matched = False
            else:
                raise UsageError(f"{path}:{number}: unsupported Match criterion {criterion!r}")
        result = result and (matched != negated)
    return result, wants_final


def _settings(state: _Pass) -> SshSettings:
    values = state.values
    hostname = state.current_hostname()
    user = state.current_user()
    port_text = values.get("port", ["22"])[0]
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise UsageError(f"ssh config: Port {port_text!r} for {state.host} is not 1..65535")
    strict = values.get("stricthostkeychecking", ["ask"])[0].lower()
    if strict not in _STRICT:
        raise UsageError(f"ssh config: StrictHostKeyChecking {strict!r} is not one ssh knows")
    settings = SshSettings(
        host=state.host,
        hostname=hostname,
        user=user,
        port=int(port_text),
        local_user=state.local_user,
        home=state.home,
        identity_files=values.get("identityfile") or list(DEFAULT_IDENTITIES),
        identity_files_given="identityfile" in values,
        identities_only=_yes(values.get("identitiesonly", ["no"])[0]),
        identity_agent=values.get("identityagent", [None])[0],
        certificate_files=values.get("certificatefile", []),
        user_known_hosts_files=[],
        global_known_hosts_files=[],
        host_key_alias=values.get("hostkeyalias", [None])[0],
        strict_host_key_checking=_STRICT[strict],
        proxy_jump=values.get("proxyjump", [None])[0],
        proxy_command=values.get("proxycommand", [None])[0],
        connect_timeout=_seconds(values.get("connecttimeout", ["none"])[0], "ConnectTimeout"),
        server_alive_interval=_seconds(
            values.get("serveraliveinterval", ["0"])[0], "ServerAliveInterval"
        )
        or 0,
        files_read=state.files_read,
        notes=state.notes,
    )
    settings.user_known_hosts_files = [
        settings.expand(p) for p in values.get("userknownhostsfile", DEFAULT_USER_KNOWN_HOSTS)
    ]
    settings.global_known_hosts_files = [
        settings.expand(p) for p in values.get("globalknownhostsfile", DEFAULT_GLOBAL_KNOWN_HOSTS)
    ]
    return settings


def _yes(text: str) -> bool:
    return text.lower() in ("yes", "true")


def _seconds(text: str, keyword: str) -> int | None:
    if text.lower() == "none":
        return None
    if not text.isdigit():
        raise UsageError(f"ssh config: {keyword} {text!r} is not a whole number of seconds")
    return int(text) or None
