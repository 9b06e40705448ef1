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
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from forensics.core.declared import DeclaredProblem, problem_words, read_declared
from forensics.core.errors import UsageError
from forensics.core.models import CollectOptions, Declared, SshOptions, Target, host_problem
from forensics.core.ticket_settings import TicketSettings
from forensics.fleet.located_yaml import (
    LocatedYaml,
    YamlProblem,
    dotted,
    load_located,
    read_bounded,
)
from forensics.probes import PROBES

MAX_ERRORS_SHOWN = 20

PATH_FIELDS = ("identity", "known_hosts", "ssh_config")
# Every declared option (core/models.py) is a setting of the same name, checked by its
# declaration once the levels are merged.
OPTIONS: dict[str, type[BaseModel]] = {
    name: model for model in (SshOptions, CollectOptions) for name in model.model_fields
}

_NAME = re.compile(r"^[^\s/]+$")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_FIELDS = ("password", "passphrase", "secret", "token", "private_key")

Options = TypeVar("Options", bound=Declared)


class InventoryError(UsageError):
    """The inventory cannot be used; the message has one ``file:line: field: problem`` per
    line."""


class Settings(BaseModel):
    """What ``defaults``, a group and a host may set: any option of ``SshOptions`` or
    ``CollectOptions`` by its name (kept as written here, checked once merged), and where
    its findings open tickets."""

    model_config = ConfigDict(extra="allow")

    tickets: TicketSettings | None = Field(
        default=None, description="Open tickets for this host's findings (docs/TICKETS.md)."
    )

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class HostEntry(Settings):
    name: str | None = Field(default=None, description="Default: host, or host:port.")
    host: str
    tags: list[str] = Field(default_factory=list)


class Group(Settings):
    hosts: list[HostEntry] = Field(default_factory=list)


class InventoryFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

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
        options = self.options
        if connect_timeout_s is not None:
            target = target.model_copy(update={"connect_timeout": connect_timeout_s})
        if timeout_s is not None:
            options = options.model_copy(update={"timeout": timeout_s})
        return self.model_copy(update={"target": target, "options": options})


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


def _words(detail: ErrorDetails) -> str:
    if detail["type"] == "extra_forbidden":
        return _unknown_field(str(detail["loc"][-1]))
    return problem_words(detail)


def _unknown_field(field: str) -> str:
    if any(secret in field.lower() for secret in _SECRET_FIELDS):
        return "secrets do not belong in the inventory; use a key file (identity) or the SSH agent"
    close = difflib.get_close_matches(field, _KNOWN_FIELDS, n=1)
    return "unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")


_KNOWN_FIELDS = sorted(
    {
        *OPTIONS,
        *(
            name
            for model in (InventoryFile, Group, HostEntry, TicketSettings)
            for name in model.model_fields
        ),
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
        count = len(self.problems)
        tickets = None
        for layer_where, layer in layers:
            tickets = layer.tickets if layer.tickets is not None else tickets
            for field, value in layer.settings.items():
                if field not in OPTIONS:
                    self._problem((*layer_where, field), _unknown_field(field))
                elif value is not None:
                    merged[field] = value
                    origin[field] = (*layer_where, field)
        for field in ("user", "proxy_jump"):
            if isinstance(merged.get(field), str) and "${" in merged[field]:
                self._problem(
                    origin[field],
                    "${...} is expanded in local paths only (identity, known_hosts, ssh_config)",
                )
        for field in PATH_FIELDS:
            if isinstance(merged.get(field), str):
                merged[field] = self._local_path(origin[field], merged[field])
        if isinstance(merged.get("logs"), dict):
            self._problem(
                origin["logs"],
                "logs is a list of globs to read; the paths that must exist go in expected_logs",
            )
            return None
        ssh = self._declared(SshOptions, merged, origin)
        options = self._declared(CollectOptions, merged, origin)
        if options is not None:
            self._check_probes(origin.get("probes"), options.probes)
        problem = host_problem(entry.host)
        if problem is not None:
            self._problem((*where, "host"), f"{problem}, got {entry.host!r}")
        port = ssh.port if ssh is not None else None
        name = entry.name or (entry.host if port in (None, 22) else f"{entry.host}:{port}")
        if not _NAME.match(name):
            self._problem((*where, "name"), f"host names have no spaces or '/', got {name!r}")
        for tag in entry.tags:
            if not _NAME.match(tag):
                self._problem((*where, "tags"), f"tags have no spaces or '/', got {tag!r}")
        if len(self.problems) > count or ssh is None or options is None:
            return None
        return ResolvedHost(
            name=name,
            group=group_name,
            tags=tuple(entry.tags),
            source=f"{self.path}:{self.document.line_of(where)}",
            target=Target(name=name, host=entry.host, **ssh.model_dump()),
            options=options,
            tickets=tickets,
        )

    def _declared(
        self,
        model: type[Options],
        merged: dict[str, Any],
        origin: dict[str, tuple[str | int, ...]],
    ) -> Options | None:
        """``model`` from the merged settings of its fields, or None with the problem
        noted at the line that set the refused value."""
        try:
            return read_declared(
                model, {k: v for k, v in merged.items() if k in model.model_fields}
            )
        except DeclaredProblem as refused:
            field = str(refused.where[0])
            self._problem((*origin.get(field, (field,)), *refused.where[1:]), refused.problem)
            return None

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

    def _check_probes(self, where: tuple[str | int, ...] | None, names: Sequence[str]) -> None:
        known = [probe.name for probe in PROBES]
        for name in names:
            if name not in known:
                self._problem(
                    where or ("probes",),
                    f"unknown probe {name!r} (this build has: {', '.join(known)})",
                )
