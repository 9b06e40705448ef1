"""``inventory.yaml``: the fleet, its groups, and each host's settings, resolved into Targets.

Three levels, each narrower one replacing what the wider one set, field by field (a list
or mapping set on a host replaces the group's whole list or mapping)::

    defaults:            # every host
    groups: {NAME: ...}  # the hosts of one group: the same fields, plus `hosts:`
    hosts: [...]         # hosts outside any group

Every error names the file, the line and the field (``inventory.yaml:14: hosts[2].port:
must be 1..65535, got 'abc'``). ``${NAME}`` is expanded from the environment in local
paths only (identity, known_hosts, ssh_config); relative paths are relative to the
inventory file. The file holds no secrets: keys stay in files or the SSH agent.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from forensics.core.duration_input import parse_duration
from forensics.core.errors import UsageError
from forensics.core.focus import focus_problem
from forensics.core.log_options import log_path_problem
from forensics.core.models import CollectOptions, MemoryThresholds, Target
from forensics.core.thresholds import ThresholdProblem, memory_thresholds
from forensics.core.ticket_settings import TicketSettings
from forensics.fleet.located_yaml import (
    LocatedYaml,
    YamlProblem,
    dotted,
    load_located,
    read_bounded,
)
from forensics.probes import PROBES

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_TIMEOUT_S = 120.0
MAX_ERRORS_SHOWN = 20

PATH_FIELDS = ("identity", "known_hosts", "ssh_config")

_NAME = re.compile(r"^[^\s/]+$")
_HOST = re.compile(r"^[^\s/@,${}]+$")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_JUMP_HOP = re.compile(r"^(?:[^@\s,/]+@)?(?:\[[0-9A-Fa-f:.]+\]|[^@\s:,/\[\]]+)(?::\d{1,5})?$")
_SECRET_FIELDS = ("password", "passphrase", "secret", "token", "private_key")


class InventoryError(UsageError):
    """The inventory cannot be used; the message has one ``file:line: field: problem`` per
    line."""


def _port(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value)
    else:
        raise ValueError(f"must be 1..65535, got {value!r}")
    if not 1 <= number <= 65535:
        raise ValueError(f"must be 1..65535, got {value!r}")
    return number


def _seconds(value: object) -> float:
    seconds = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = parse_duration(value)
    if seconds is None or seconds <= 0:
        raise ValueError(f"must be a positive duration such as 30, 90s or 2m, got {value!r}")
    return seconds


Port = Annotated[int, BeforeValidator(_port)]
Seconds = Annotated[float, BeforeValidator(_seconds)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LogSettings(_Strict):
    watch: list[str] = Field(
        default_factory=list, description="Globs of log files on the host whose tails to read."
    )
    expect: list[str] = Field(
        default_factory=list,
        description="Log files that should exist on the host; a missing one is a finding.",
    )


class Settings(_Strict):
    """What ``defaults``, a group and a host may set; None means "inherit"."""

    user: str | None = None
    port: Port | None = None
    identity: str | None = Field(default=None, description="Private key file (local path).")
    known_hosts: str | None = Field(default=None, description="known_hosts file (local path).")
    ssh_config: str | None = Field(default=None, description="SSH config file (local path).")
    proxy_jump: str | None = Field(default=None, description="[user@]host[:port][,...]")
    accept_new_host_key: bool | None = None
    connect_timeout: Seconds | None = None
    timeout: Seconds | None = Field(default=None, description="Deadline for the whole host.")
    probes: list[str] | None = None
    focus: str | None = None
    logs: LogSettings | None = None
    scripts: list[str] | None = Field(
        default=None, description="Wrapper scripts on the host to check (paths on the host)."
    )
    thresholds: dict[str, float] | None = Field(
        default=None, description="Memory finding thresholds by name, as collect --threshold."
    )
    sudo: bool | None = Field(default=None, description="Run the script through sudo -n.")
    tickets: TicketSettings | None = Field(
        default=None, description="Open tickets for this host's findings (docs/TICKETS.md)."
    )


class HostEntry(Settings):
    name: str | None = Field(default=None, description="Default: host, or host:port.")
    host: str
    tags: list[str] = Field(default_factory=list)


class Group(Settings):
    hosts: list[HostEntry] = Field(default_factory=list)


class InventoryFile(_Strict):
    history: str | None = Field(
        default=None, description="Where sweep history goes: a SQLite path or postgresql:// URL."
    )
    defaults: Settings = Field(default_factory=Settings)
    groups: dict[str, Group] = Field(default_factory=dict)
    hosts: list[HostEntry] = Field(default_factory=list)


class ResolvedHost(BaseModel):
    """One host with every level applied: what a sweep collects."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    group: str | None
    tags: tuple[str, ...]
    source: str = Field(description="file:line of the host's entry.")
    target: Target
    timeout_s: float
    options: CollectOptions
    tickets: TicketSettings | None = None

    @property
    def address(self) -> str:
        user = f"{self.target.user}@" if self.target.user else ""
        port = f":{self.target.port}" if self.target.port else ""
        return f"{user}{self.target.host}{port}"

    def with_deadlines(
        self, timeout_s: float | None, connect_timeout_s: float | None
    ) -> ResolvedHost:
        """This host with the command line's deadlines, where given, over the inventory's."""
        target = self.target
        if connect_timeout_s is not None:
            target = target.model_copy(update={"connect_timeout": connect_timeout_s})
        return self.model_copy(update={"target": target, "timeout_s": timeout_s or self.timeout_s})


class Inventory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    groups: tuple[str, ...]
    hosts: tuple[ResolvedHost, ...]
    history: str | None = None

    def select(self, groups: Sequence[str] = (), limits: Sequence[str] = ()) -> list[ResolvedHost]:
        """The hosts in any of ``groups`` (all when none) whose name or a tag matches any of
        the ``limits`` globs (all when none)."""
        unknown = [group for group in groups if group not in self.groups]
        if unknown:
            known = ", ".join(self.groups) or "none"
            raise UsageError(f"{self.path}: no group {unknown[0]!r} (groups: {known})")
        chosen = [
            host
            for host in self.hosts
            if (not groups or host.group in groups)
            and (
                not limits
                or any(
                    fnmatch.fnmatchcase(word, glob)
                    for glob in limits
                    for word in (host.name, *host.tags)
                )
            )
        ]
        if not chosen:
            raise UsageError(
                f"{self.path}: no host matches --group {list(groups)} --limit {list(limits)}"
            )
        return chosen


def load_inventory(path: Path) -> Inventory:
    """Read, validate and resolve ``path``; raise ``InventoryError`` with file:line messages."""
    try:
        text = read_bounded(path)
    except FileNotFoundError as error:
        raise InventoryError(
            f"{path}: no such inventory file (name it: forensics inventory check FILE, "
            "forensics sweep --inventory FILE; see docs/INVENTORY.md)"
        ) from error
    except (OSError, ValueError) as error:
        raise InventoryError(f"{path}: cannot read the inventory: {error}") from error
    return parse_inventory(text, path)


def parse_inventory(text: str, path: Path) -> Inventory:
    """The same as ``load_inventory`` for text already read (``path`` names it in errors)."""
    try:
        document = load_located(text)
    except YamlProblem as problem:
        raise InventoryError(f"{path}:{problem.line}: {problem.message}") from problem
    if document.data is None:
        raise InventoryError(f"{path}:1: the inventory is empty; it needs at least `hosts:`")
    if not isinstance(document.data, dict):
        raise InventoryError(
            f"{path}:1: (top level): expected a mapping with defaults, groups and hosts, "
            f"got a {type(document.data).__name__}"
        )
    try:
        parsed = InventoryFile.model_validate(document.data)
    except ValidationError as error:
        raise InventoryError(_describe(error, document, path)) from error
    return _Resolver(parsed, document, path).resolve()


def _describe(error: ValidationError, document: LocatedYaml, path: Path) -> str:
    problems = [
        f"{path}:{document.line_of(detail['loc'])}: {dotted(detail['loc'])}: {_words(detail)}"
        for detail in error.errors()
    ]
    if len(problems) > MAX_ERRORS_SHOWN:
        hidden = len(problems) - MAX_ERRORS_SHOWN
        problems = [*problems[:MAX_ERRORS_SHOWN], f"{path}: ... and {hidden} more"]
    return "\n".join(problems)


def _words(detail: Any) -> str:
    kind = detail["type"]
    field = str(detail["loc"][-1]) if detail["loc"] else ""
    if kind == "extra_forbidden":
        if any(secret in field.lower() for secret in _SECRET_FIELDS):
            return (
                "secrets do not belong in the inventory; use a key file (identity) or the SSH agent"
            )
        close = difflib.get_close_matches(field, _KNOWN_FIELDS, n=1)
        return "unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")
    if kind == "value_error":
        return str(detail["ctx"]["error"])
    if kind == "missing":
        return "required field is missing"
    message = str(detail["msg"])
    return f"{message[0].lower()}{message[1:]}, got {detail['input']!r}"


_KNOWN_FIELDS = sorted(
    {
        name
        for model in (InventoryFile, Group, HostEntry, LogSettings, TicketSettings)
        for name in model.model_fields
    }
)


class _Resolver:
    """Applies defaults, group and host settings, and checks what the schema cannot."""

    def __init__(self, parsed: InventoryFile, document: LocatedYaml, path: Path) -> None:
        self.parsed = parsed
        self.document = document
        self.path = path
        self.problems: list[str] = []

    def resolve(self) -> Inventory:
        entries: list[tuple[tuple[str | int, ...], str | None, HostEntry]] = []
        for group_name, group in self.parsed.groups.items():
            if not _NAME.match(group_name):
                self._problem(("groups", group_name), "group names have no spaces or '/'")
            for index, entry in enumerate(group.hosts):
                entries.append((("groups", group_name, "hosts", index), group_name, entry))
        for index, entry in enumerate(self.parsed.hosts):
            entries.append((("hosts", index), None, entry))
        hosts: list[ResolvedHost] = []
        first_seen: dict[str, int] = {}
        for where, in_group, host_entry in entries:
            host = self._host(where, in_group, host_entry)
            if host is None:
                continue
            line = self.document.line_of(where)
            if host.name in first_seen:
                self._problem(
                    (*where, "name"),
                    f"duplicate host name {host.name!r} (first at line {first_seen[host.name]}); "
                    "give each host its own name",
                )
                continue
            first_seen[host.name] = line
            hosts.append(host)
        if not hosts and not self.problems:
            self._problem((), "no hosts: add a `hosts:` list or a group with `hosts:`")
        if self.problems:
            raise InventoryError("\n".join(self.problems[:MAX_ERRORS_SHOWN]))
        return Inventory(
            path=str(self.path),
            groups=tuple(self.parsed.groups),
            hosts=tuple(hosts),
            history=self.parsed.history,
        )

    def _problem(self, where: Sequence[str | int], message: str) -> None:
        line = self.document.line_of(where)
        problem = f"{self.path}:{line}: {dotted(where)}: {message}"
        if problem not in self.problems:  # a bad default is one problem, not one per host
            self.problems.append(problem)

    def _host(
        self,
        where: tuple[str | int, ...],
        group_name: str | None,
        entry: HostEntry,
    ) -> ResolvedHost | None:
        merged: dict[str, Any] = {}
        layers: list[tuple[tuple[str | int, ...], Settings]] = [
            (("defaults",), self.parsed.defaults)
        ]
        if group_name is not None:
            layers.append((("groups", group_name), self.parsed.groups[group_name]))
        layers.append((where, entry))
        origin: dict[str, tuple[str | int, ...]] = {}
        for layer_where, layer in layers:
            for field in Settings.model_fields:
                value = getattr(layer, field)
                if value is not None:
                    merged[field] = value
                    origin[field] = (*layer_where, field)
        count = len(self.problems)
        for field in ("user", "proxy_jump"):
            if field in merged and "${" in merged[field]:
                self._problem(
                    origin[field],
                    "${...} is expanded in local paths only (identity, known_hosts, ssh_config)",
                )
        for field in PATH_FIELDS:
            if field in merged:
                merged[field] = self._local_path(origin[field], merged[field])
        if not _HOST.match(entry.host):
            self._problem((*where, "host"), f"expected a host name or address, got {entry.host!r}")
        if "proxy_jump" in merged:
            self._check_jump(origin["proxy_jump"], merged["proxy_jump"])
        self._check_probes(origin.get("probes"), merged.get("probes", []))
        self._check_focus(origin.get("focus"), merged.get("focus"))
        logs: LogSettings = merged.get("logs", LogSettings())
        self._check_logs(origin.get("logs"), logs)
        thresholds = self._thresholds(origin.get("thresholds"), merged.get("thresholds", {}))
        port = merged.get("port")
        name = entry.name or (entry.host if port in (None, 22) else f"{entry.host}:{port}")
        if not _NAME.match(name):
            self._problem((*where, "name"), f"host names have no spaces or '/', got {name!r}")
        for tag in entry.tags:
            if not _NAME.match(tag):
                self._problem((*where, "tags"), f"tags have no spaces or '/', got {tag!r}")
        if len(self.problems) > count:
            return None
        target = Target(
            name=name,
            host=entry.host,
            port=port,
            user=merged.get("user"),
            identity=merged.get("identity"),
            ssh_config=merged.get("ssh_config"),
            known_hosts=merged.get("known_hosts"),
            proxy_jump=merged.get("proxy_jump"),
            accept_new_host_key=merged.get("accept_new_host_key", False),
            connect_timeout=merged.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT_S),
            sudo=merged.get("sudo", False),
        )
        options = CollectOptions(
            focus=merged.get("focus"),
            probes=tuple(merged.get("probes", ())),
            logs=tuple(logs.watch),
            expected_logs=tuple(logs.expect),
            memory_thresholds=thresholds,
            scripts=tuple(merged.get("scripts", ())),
        )
        return ResolvedHost(
            name=name,
            group=group_name,
            tags=tuple(entry.tags),
            source=f"{self.path}:{self.document.line_of(where)}",
            target=target,
            timeout_s=merged.get("timeout", DEFAULT_TIMEOUT_S),
            options=options,
            tickets=merged.get("tickets"),
        )

    def _local_path(self, where: tuple[str | int, ...], value: str) -> str:
        def expand(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                self._problem(where, f"environment variable {name} is not set")
                return match.group(0)
            return os.environ[name]

        expanded = Path(_ENV.sub(expand, value)).expanduser()
        if not expanded.is_absolute():
            expanded = self.path.parent / expanded
        return str(expanded)

    def _check_jump(self, where: tuple[str | int, ...], value: str) -> None:
        for hop in value.split(","):
            if not _JUMP_HOP.match(hop.strip()):
                self._problem(where, f"expected [user@]host[:port][,...], got {value!r}")
                return

    def _check_probes(self, where: tuple[str | int, ...] | None, names: list[str]) -> None:
        known = [probe.name for probe in PROBES]
        for name in names:
            if name not in known:
                self._problem(
                    where or ("probes",),
                    f"unknown probe {name!r} (this build has: {', '.join(known)})",
                )

    def _check_logs(self, where: tuple[str | int, ...] | None, logs: LogSettings) -> None:
        for kind in ("watch", "expect"):
            for index, path in enumerate(getattr(logs, kind)):
                problem = log_path_problem(path)
                if problem is not None:
                    self._problem((*(where or ("logs",)), kind, index), f"{problem}, got {path!r}")

    def _thresholds(
        self, where: tuple[str | int, ...] | None, values: dict[str, float]
    ) -> MemoryThresholds:
        try:
            return memory_thresholds(values)
        except ThresholdProblem as error:
            self._problem((*(where or ("thresholds",)), error.name), error.problem)
            return MemoryThresholds()

    def _check_focus(self, where: tuple[str | int, ...] | None, focus: str | None) -> None:
        problem = focus_problem(focus) if focus is not None else None
        if problem is not None:
            self._problem(where or ("focus",), problem)
