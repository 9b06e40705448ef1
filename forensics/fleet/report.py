"""``FleetReport``: one sweep over many hosts; what ``sweep --format json`` prints and what the
fleet templates render.

Per host it keeps the outcome, the timings, the findings (as history tracks them), the
headline, what could not be checked, the few facts fleet-wide patterns compare, and the
path of the host's bundle. Every fact, every finding's explanation, evidence and next
steps, the timeline and the sections are in that bundle (its ``report.json``, or
``forensics report BUNDLE``), not here: a fleet report stays small however much each host
says (``forensics.fleet.summary``).
"""

from __future__ import annotations

import enum
from collections import Counter
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from forensics.core.models import CollectStatus, Severity
from forensics.core.redaction import redact, redact_fields
from forensics.fleet.fingerprint import Changes, TrackedFinding
from forensics.judge.host_report import Unchecked

SCHEMA_VERSION = 2
"""2: each host's ``report`` is a ``HostSummary`` (1 embedded the whole ``HostReport``)."""
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


class HostSummary(BaseModel):
    """What the fleet report keeps of one host's report; the rest is in its bundle."""

    model_config = ConfigDict(extra="forbid")

    headline: str = Field(description="The host report's one-sentence verdict.")
    findings: list[TrackedFinding] = Field(
        default_factory=list,
        description="Worst first, one per fingerprint; with explanation, evidence and next "
        "steps in the bundle's report.json.",
    )
    unchecked: list[Unchecked] = Field(
        default_factory=list,
        description="What could not be checked: incomplete sections, probes that read nothing.",
    )
    complete_sections: list[str] = Field(
        default_factory=list,
        description="Sections that came back whole: a finding missing from them is resolved.",
    )
    traits: dict[str, list[str]] = Field(
        default_factory=dict,
        description="The facts fleet-wide patterns compare (driver, gpu_model, kernel, os, "
        "container), by name; a fact the host could not read is absent.",
    )

    @model_validator(mode="after")
    def _host_text_redacted(self) -> HostSummary:
        """Redacted however it was made (from a judged report, or a fleet.json read back)."""
        redact_fields(self, ("headline", "findings", "unchecked", "traits"))
        return self

    @property
    def worst(self) -> Severity | None:
        return Severity.worst(finding.severity for finding in self.findings)


class HostRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    group: str | None = None
    address: str = Field(description="user@host:port as the inventory resolved it.")
    tags: list[str] = Field(default_factory=list, description="The inventory's tags.")
    status: HostStatus
    reason: str | None = Field(default=None, description="Why not ok, in one line.")
    started: datetime | None = None
    finished: datetime | None = None
    bundle: str | None = Field(
        default=None,
        description="The host's bundle: raw evidence, manifest and the full report.json.",
    )
    report: HostSummary | None = Field(
        default=None, description="None when nothing was collected from the host."
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
    total: int = Field(
        description="How many distinct findings (fingerprints) with this id, all hosts together."
    )


class SharedFact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fact: str = Field(description="driver, gpu_model, kernel, os, container or tag.")
    value: str
    with_finding: int = Field(description="Hosts with the finding that have the value.")
    read_with_finding: int = Field(description="Hosts with the finding where it was read.")
    others: int = Field(description="Hosts without the finding that have the value.")
    read_others: int = Field(description="Hosts without the finding where it was read.")
    others_total: int = Field(description="Collected hosts without the finding.")
    text: str


class FleetPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")

    finding: str = Field(description="The finding id, with its code when it has one.")
    hosts: list[str] = Field(description="The hosts with the finding, by name.")
    collected: int = Field(description="Collected hosts, with the finding or not.")
    shared: list[SharedFact] = Field(default_factory=list)
    text: str = Field(description="One line, e.g. 'gpu.xid 79 on 12 of 64 hosts; all 12 ...'.")


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
    patterns: list[FleetPattern] = Field(
        default_factory=list,
        description="Findings several hosts share, with the facts those hosts have in common.",
    )

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
