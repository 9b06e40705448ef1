"""The models that cross a boundary: what the CLI, the bundle and the reports exchange.

Everything here is pydantic v2 and part of the public contract (`forensics schema`).
Probe-specific facts live beside their probe in `probes/`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)

from forensics.core.declared import CommandLine, from_operator
from forensics.core.focus import focus_problem
from forensics.core.levels import CollectStatus as CollectStatus
from forensics.core.levels import Severity as Severity
from forensics.core.units import Duration


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Declared(Frozen):
    """A model whose fields are options an operator sets (``core/declared.py``): every
    number finite."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def _port(value: object) -> int | None:
    """A TCP port from a number or its digits.

    >>> _port("2222"), _port(22), _port(None)
    (2222, 22, None)
    """
    if value is None:
        return None
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value)
    if number is None or not 1 <= number <= 65535:
        raise ValueError(f"must be 1..65535, got {value!r}")
    return number


def host_problem(host: str) -> str | None:
    """Why ``host`` cannot name a host to connect to, or None. A resolver reads names in
    dot-separated labels of 1 to 63 characters (IDNA), 253 in all.

    >>> host_problem("ssh6.vast.ai"), host_problem("::1"), host_problem("gpu_a")
    (None, None, None)
    >>> host_problem("a..b")
    'not a host name: every dot-separated label needs 1 to 63 characters'
    """
    try:
        encoded = host.encode("idna")
    except UnicodeError:
        return "not a host name: every dot-separated label needs 1 to 63 characters"
    if not host or len(encoded) > 253 or any(c.isspace() or c in "/@,${}" for c in host):
        return "not a host name: at most 253 characters, none of space / @ , $ { }"
    return None


def _host(value: str | None) -> str | None:
    problem = host_problem(value) if value is not None else None
    if problem is not None:
        raise ValueError(f"{problem}, got {value!r}")
    return value


_JUMP_HOP = re.compile(r"^(?:[^@\s,/]+@)?(?:\[[0-9A-Fa-f:.]+\]|[^@\s:,/\[\]]+)(?::\d{1,5})?$")


def _jump_hosts(value: str | None) -> str | None:
    if value is not None and not all(_JUMP_HOP.match(hop.strip()) for hop in value.split(",")):
        raise ValueError(f"expected [user@]host[:port][,...], got {value!r}")
    return value


Port = Annotated[int | None, BeforeValidator(_port), CommandLine(metavar="PORT")]


class SshOptions(Declared):
    """How to reach a host; the SSH options of ``collect``, ``watch`` and ``wait`` and the
    settings of an inventory host."""

    port: Port = Field(default=None, ge=1, le=65535, description="SSH port (overrides host:port).")
    user: str | None = Field(default=None, description="SSH user (overrides user@).")
    identity: Annotated[str | None, CommandLine(metavar="FILE", short="-i")] = Field(
        default=None, description="Private key file."
    )
    ssh_config: Annotated[str | None, CommandLine(metavar="FILE")] = Field(
        default=None,
        description="SSH config file, read as `ssh -F FILE` would (default ~/.ssh/config and "
        "/etc/ssh/ssh_config).",
    )
    proxy_jump: Annotated[str | None, AfterValidator(_jump_hosts)] = Field(
        default=None, description="Jump hosts, as ssh -J: [user@]host[:port][,...]."
    )
    known_hosts: Annotated[str | None, CommandLine(metavar="FILE")] = Field(
        default=None,
        description="known_hosts file, the only one checked (default: the SSH config's "
        "known_hosts files).",
    )
    accept_new_host_key: bool = Field(
        default=False,
        description="Trust an unknown host key on first use and add it to known_hosts "
        "(recorded in the manifest). A changed key is always refused.",
    )
    connect_timeout: Duration = Field(default=10.0, gt=0, description="Time to establish SSH.")
    sudo: bool = Field(
        default=False,
        description="Run the script as root through `sudo -n /bin/sh` (needs a NOPASSWD rule; "
        "never asks a password).",
    )


class _Named(Declared):
    name: str = Field(description="What the operator calls it: an alias, host[:port] or 'local'.")
    host: Annotated[str | None, AfterValidator(_host)] = Field(
        default=None, description="Host name or address; None for local."
    )


class Target(SshOptions, _Named):
    """Where to collect from. ``local`` runs the same script on this machine, without SSH."""

    @property
    def is_local(self) -> bool:
        return self.host is None


# Pairs of thresholds where the first must not fire after the second: (warning, critical)
# of one measure; for "available" less is worse, so its warning is the larger number.
_ORDERED_THRESHOLDS = (
    ("near_limit_warning_percent", "near_limit_critical_percent"),
    ("pressure_full_avg10", "pressure_full_critical_avg10"),
    ("available_critical_percent", "available_warning_percent"),
    ("locked_percent", "locked_warning_percent"),
)


class MemoryThresholds(Declared):
    """When memory findings fire; ``--threshold NAME=VALUE`` on ``collect`` overrides one."""

    near_limit_warning_percent: float = Field(default=90, gt=0, le=100)
    near_limit_critical_percent: float = Field(default=97, gt=0, le=100)
    kernel_memory_gib: float = Field(default=4, gt=0, description="Kernel memory of a cgroup.")
    kernel_memory_percent: float = Field(default=20, gt=0, le=100, description="Of its usage.")
    pressure_some_avg10: float = Field(default=20, gt=0, le=100, description="PSI %, warning.")
    pressure_full_avg10: float = Field(default=5, gt=0, le=100, description="PSI %, warning.")
    pressure_full_critical_avg10: float = Field(default=20, gt=0, le=100)
    available_warning_percent: float = Field(default=10, gt=0, le=100, description="Of MemTotal.")
    available_critical_percent: float = Field(default=5, gt=0, le=100)
    locked_percent: float = Field(default=10, gt=0, le=100, description="Of MemTotal, info.")
    locked_warning_percent: float = Field(default=25, gt=0, le=100)

    @model_validator(mode="after")
    def _warning_before_critical(self, info: ValidationInfo) -> MemoryThresholds:
        for lower, higher in _ORDERED_THRESHOLDS if from_operator(info) else ():
            if getattr(self, lower) > getattr(self, higher):
                raise ValueError(
                    f"{lower} ({getattr(self, lower):g}) must not be above "
                    f"{higher} ({getattr(self, higher):g}): a warning fires before the "
                    "critical finding"
                )
        return self


def log_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a log on the host, or None. The script runs in a private
    temp dir there, so a relative path would mean nothing.

    >>> log_path_problem("~/bench*.log") is None
    True
    >>> log_path_problem("bench.log")
    'give an absolute path or one starting with ~/'
    """
    if not (path.startswith("/") or path.startswith("~/")) or "\n" in path:
        return "give an absolute path or one starting with ~/"
    return None


def _log_path(path: str, info: ValidationInfo) -> str:
    problem = log_path_problem(path) if from_operator(info) else None
    if problem is not None:
        raise ValueError(f"{problem}, got {path!r}")
    return path


def _focus(pattern: str | None, info: ValidationInfo) -> str | None:
    problem = focus_problem(pattern) if pattern is not None and from_operator(info) else None
    if problem is not None:
        raise ValueError(problem)
    return pattern


LogPath = Annotated[str, AfterValidator(_log_path)]

# Names this model had in manifests written before the options were declared once.
_EARLIER_NAMES = {
    "gpu_timeout_s": "gpu_timeout",
    "snapshot_gap_s": "snapshot_gap",
    "memory_thresholds": "thresholds",
}


class CollectOptions(Declared):
    """What the operator asked a collection to look at (the one declaration of each
    option: the command line, the inventory and the manifest use these names); probes
    read it to shape their sections."""

    timeout: Duration = Field(
        default=120.0, gt=0, description="Deadline for the whole collection of the host."
    )
    probes: Annotated[tuple[str, ...], CommandLine(metavar="NAME")] = Field(
        default=(), description="Run only these probes; empty means all."
    )
    focus: Annotated[str | None, AfterValidator(_focus), CommandLine(metavar="REGEX")] = Field(
        default=None, description="Regex on process name or command line: the process in question."
    )
    logs: Annotated[tuple[LogPath, ...], CommandLine(metavar="GLOB")] = Field(
        default=(), description="Log file globs to read on the host: absolute, or ~/ for $HOME."
    )
    expected_logs: Annotated[
        tuple[LogPath, ...], CommandLine(metavar="PATH", old_spelling="--expect-log")
    ] = Field(
        default=(), description="Log paths that should exist on the host; absence is a finding."
    )
    log_lines: Annotated[int, CommandLine(metavar="N")] = Field(
        default=50, ge=1, le=1000, description="Last lines kept per log."
    )
    gpu_timeout: Duration = Field(
        default=30.0, gt=0, description="Time nvidia-smi may take before it counts as hung."
    )
    snapshot_gap: Duration = Field(
        default=2.0, ge=0, le=60, description="Time between the two process-table snapshots."
    )
    thresholds: Annotated[MemoryThresholds, CommandLine(metavar="NAME=VALUE")] = Field(
        default_factory=MemoryThresholds,
        description="When memory findings fire, by name (see docs/memory.md).",
    )
    scripts: Annotated[tuple[str, ...], CommandLine(metavar="PATH")] = Field(
        default=(),
        description="Shell scripts on the host to read and check for masked exit statuses, "
        "besides the running ones.",
    )

    @model_validator(mode="before")
    @classmethod
    def _earlier_names(cls, values: Any) -> Any:
        if isinstance(values, dict) and any(name in values for name in _EARLIER_NAMES):
            return {_EARLIER_NAMES.get(name, name): value for name, value in values.items()}
        return values


class SectionSpec(Frozen):
    """One piece of the remote script, as a probe declares it."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    shell: str = Field(description="POSIX sh; runs with LC_ALL=C, stdin from /dev/null.")
    timeout_s: float = Field(default=10.0, gt=0)
    max_bytes: int = Field(default=1 << 20, gt=0)
    place: Literal["opening", "in_order", "closing"] = Field(
        default="in_order",
        description="Where it runs in the host script: 'opening' before every other "
        "section, 'closing' after all of them (the two ends of a gap the others fill, as "
        "the process snapshots are), 'in_order' by its probe's run_order.",
    )
    in_shell: bool = Field(
        default=False,
        description="Runs in the host script's own shell, with no sh, watchdog or frame "
        "process of its own: for a section that reads files with builtins and runs nothing "
        "that can hang. The script's one deadline bounds it; it must end with `return`, "
        "never `exit`, and start no background process.",
    )


class SectionResult(Frozen):
    """What happened to one section on the host; one entry of the manifest."""

    name: str
    command: str
    exit_status: int | None = Field(description="None when the section never finished.")
    duration_s: float | None
    bytes: int = Field(description="Bytes kept in raw/<name>.txt (after the cap).")
    stderr_bytes: int = 0
    truncated: bool = Field(description="The byte cap was reached; the output was cut.")
    timed_out: bool
    timeout_enforced: bool = Field(
        default=True, description="False when the host had no usable `timeout` command."
    )
    finished: bool = Field(description="False when the run ended before this section did.")
    sha256: str | None = None
    stderr_sha256: str | None = None

    @property
    def usable(self) -> bool:
        """True when the output is complete enough to reason on (it may still be empty)."""
        return self.finished and not self.timed_out

    def problem(self) -> str | None:
        """Why this section's output can't be trusted as complete, in words, or None."""
        if not self.finished:
            return "did not finish before the connection ended"
        if self.timed_out:
            return f"was stopped by its {self._timeout_words()} timeout"
        if self.truncated:
            return f"was cut at {self.bytes} bytes (its byte cap)"
        return None

    def _timeout_words(self) -> str:
        return "per-section" if self.timeout_enforced else "watchdog"


class EvidenceRef(Frozen):
    """Where in the raw output a finding comes from: section, 1-based line range, excerpt."""

    section: str
    first_line: int = Field(ge=1)
    last_line: int = Field(ge=1)
    excerpt: str


class Finding(Frozen):
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$", description="Stable key.")
    severity: Severity
    title: str
    explanation: str
    next_steps: list[str] = Field(default_factory=list)
    subject: dict[str, Any] = Field(
        default_factory=dict, description="The key facts, e.g. pid and name; used in fingerprints."
    )
    evidence: list[EvidenceRef] = Field(default_factory=list)


class HostKeySeen(Frozen):
    key_type: str
    sha256_fingerprint: str = Field(description="As OpenSSH prints it: SHA256:base64.")
    trust: Literal["known_hosts", "accepted_new", "not_applicable"]
    note: str | None = Field(
        default=None, description="Why a key not in known_hosts was trusted, when not asked."
    )


class HostStream(Frozen):
    """What the host sent on one stream of the run (stdout: the framed sections; stderr:
    its login shell), and how much of it was kept: never more than ``cap``."""

    bytes_received: int
    bytes_kept: int
    cap: int
    truncated: bool = Field(description="The host sent more than the cap; the rest was dropped.")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_version: str
    target: Target
    user: str | None
    port: int | None
    host_key: HostKeySeen | None
    started: datetime
    finished: datetime
    status: CollectStatus
    status_reason: str | None = None
    options: CollectOptions
    nonce: str
    script_sha256: str
    script: str
    sections: list[SectionResult]
    transport_exit_status: int | None = None
    run_stdout: HostStream | None = None
    run_stderr: HostStream | None = None
