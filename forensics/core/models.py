"""The models that cross a boundary: what the CLI, the bundle and the reports exchange.

Everything here is pydantic v2 and part of the public contract (`forensics schema`).
Probe-specific facts live beside their probe in `probes/`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from forensics.core.levels import CollectStatus as CollectStatus
from forensics.core.levels import Severity as Severity


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Target(Frozen):
    """Where to collect from. ``local`` runs the same script on this machine, without SSH."""

    name: str = Field(description="What the operator calls it: an alias, host[:port] or 'local'.")
    host: str | None = Field(default=None, description="Host name or address; None for local.")
    port: int | None = Field(default=None, ge=1, le=65535)
    user: str | None = None
    identity: str | None = Field(default=None, description="Private key file.")
    ssh_config: str | None = None
    proxy_jump: str | None = Field(
        default=None, description="Jump hosts, as ssh -J: [user@]host[:port][,...]."
    )
    known_hosts: str | None = None
    accept_new_host_key: bool = False
    connect_timeout: float = Field(default=10.0, gt=0)
    sudo: bool = Field(
        default=False,
        description="Run the script as root through `sudo -n /bin/sh` (never asks a password).",
    )

    @property
    def is_local(self) -> bool:
        return self.host is None


class MemoryThresholds(Frozen):
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


class CollectOptions(Frozen):
    """What the operator asked the probes to look at; probes read it to shape their sections."""

    focus: str | None = Field(
        default=None, description="Regex on process name or command line: the process in question."
    )
    probes: tuple[str, ...] = Field(default=(), description="Probe names to run; empty means all.")
    logs: tuple[str, ...] = Field(
        default=(), description="Log file globs to read on the host: absolute, or ~/ for $HOME."
    )
    expected_logs: tuple[str, ...] = Field(
        default=(), description="Log paths that should exist on the host; absence is a finding."
    )
    log_lines: int = Field(default=50, ge=1, le=1000, description="Last lines kept per log.")
    gpu_timeout_s: float = Field(
        default=30.0, gt=0, description="Seconds nvidia-smi may take before it counts as hung."
    )
    snapshot_gap_s: float = Field(
        default=2.0, ge=0, le=60, description="Seconds between the two process-table snapshots."
    )
    memory_thresholds: MemoryThresholds = Field(default_factory=MemoryThresholds)
    scripts: tuple[str, ...] = Field(
        default=(),
        description="Shell scripts to read on the host (--script), besides running ones.",
    )


class SectionSpec(Frozen):
    """One piece of the remote script, as a probe declares it."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    shell: str = Field(description="POSIX sh; runs with LC_ALL=C, stdin from /dev/null.")
    timeout_s: float = Field(default=10.0, gt=0)
    max_bytes: int = Field(default=1 << 20, gt=0)


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
