"""``FleetReport``: one sweep over many hosts; what ``sweep --format json`` prints and what the
fleet templates render."""

from __future__ import annotations

import enum
from collections import Counter
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from forensics.core.models import CollectStatus, Severity
from forensics.core.redaction import redact
from forensics.fleet.fingerprint import Changes
from forensics.judge.host_report import HostReport

SCHEMA_VERSION = 1
NOT_COLLECTED = "not_collected"
STANDING_RANKS = {"critical": 4, NOT_COLLECTED: 3, "warning": 2, "info": 1, "clean": 0}
"""A host that could not be collected sorts below a critical one and above a warning: its
state is unknown, which is worse than a known warning and better than a known disaster."""


class HostStatus(enum.StrEnum):
    """How one host of a sweep ended: a collection status, or why it has none."""

    ok = "ok"
    partial = "partial"
    unreachable = "unreachable"
    auth_failed = "auth_failed"
    host_key_rejected = "host_key_rejected"
    timeout = "timeout"
    error = "error"
    interrupted = "interrupted"
    not_started = "not_started"

    @classmethod
    def of(cls, status: CollectStatus) -> HostStatus:
        return cls(status.value)

    @property
    def collected(self) -> bool:
        return self in (HostStatus.ok, HostStatus.partial)


class HostRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    group: str | None = None
    address: str = Field(description="user@host:port as the inventory resolved it.")
    status: HostStatus
    reason: str | None = Field(default=None, description="Why not ok, in one line.")
    started: datetime | None = None
    finished: datetime | None = None
    bundle: str | None = None
    report: HostReport | None = Field(
        default=None, description="None when the host was not reached or not started."
    )
    changes: Changes | None = Field(
        default=None, description="Since this host's previous run; None when not collected."
    )

    @field_validator("reason")
    @classmethod
    def _reason_redacted(cls, reason: str | None) -> str | None:
        """A reason may quote the host (its stderr, a sudo refusal): redacted like a report."""
        return redact(reason) if reason is not None else None

    @property
    def duration_s(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return (self.finished - self.started).total_seconds()

    @property
    def worst(self) -> Severity | None:
        return self.report.worst if self.report is not None else None

    @property
    def standing(self) -> str:
        """critical, not_collected, warning, info or clean (``STANDING_RANKS``)."""
        if not self.status.collected:
            return NOT_COLLECTED
        return self.worst.value if self.worst is not None else "clean"


class FindingCount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    severity: Severity = Field(description="The worst severity seen for this id.")
    hosts: int = Field(description="How many hosts have it.")
    total: int = Field(description="How many findings with this id, all hosts together.")


class FleetReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    tool_version: str
    sweep_id: str
    inventory: str
    directory: str = Field(description="Where this sweep's bundles and fleet.json are.")
    started: datetime
    finished: datetime
    interrupted_by: str | None = Field(
        default=None, description="SIGINT or SIGTERM when the sweep was stopped early."
    )
    history: str | None = Field(default=None, description="The history database, if used.")
    hosts: list[HostRun] = Field(default_factory=list, description="Worst first.")
    finding_counts: list[FindingCount] = Field(default_factory=list)

    @property
    def collected(self) -> list[HostRun]:
        return [host for host in self.hosts if host.status.collected]

    @property
    def not_collected(self) -> list[HostRun]:
        return [host for host in self.hosts if not host.status.collected]

    def change_totals(self) -> dict[str, int]:
        totals: Counter[str] = Counter()
        for host in self.hosts:
            if host.changes is not None:
                for kind in ("new", "still", "resolved", "not_rechecked"):
                    totals[kind] += len(getattr(host.changes, kind))
        return {kind: totals[kind] for kind in ("new", "still", "resolved", "not_rechecked")}


def count_findings(hosts: list[HostRun]) -> list[FindingCount]:
    """Per finding id: on how many hosts, how many times, and the worst severity; worst
    first, then the most widespread."""
    host_count: Counter[str] = Counter()
    total: Counter[str] = Counter()
    worst: dict[str, Severity] = {}
    for host in hosts:
        if host.report is None:
            continue
        for finding_id in {finding.id for finding in host.report.findings}:
            host_count[finding_id] += 1
        for finding in host.report.findings:
            total[finding.id] += 1
            if finding.id not in worst or finding.severity.rank > worst[finding.id].rank:
                worst[finding.id] = finding.severity
    counts = [
        FindingCount(id=key, severity=worst[key], hosts=host_count[key], total=total[key])
        for key in total
    ]
    return sorted(counts, key=lambda c: (-c.severity.rank, -c.hosts, c.id))


def host_order(host: HostRun) -> tuple[int, str]:
    """Sort key, worst first by standing (``STANDING_RANKS``), then by name."""
    return (-STANDING_RANKS[host.standing], host.name)
