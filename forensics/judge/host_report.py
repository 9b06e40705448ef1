"""``HostReport``: everything known about one host after one collection; what JSON prints."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from forensics.core.facts import Facts
from forensics.core.models import (
    CollectStatus,
    Finding,
    HostKeySeen,
    SectionResult,
    Severity,
    Target,
)
from forensics.core.redaction import redact_fields
from forensics.core.timeline_event import TimelineEvent

SCHEMA_VERSION = 1


class Unchecked(BaseModel):
    """One thing a collection could not check, and why (``reports.unchecked``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    what: str = Field(description="'section NAME' or 'PROBE facts'.")
    why: str


class HostReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    tool_version: str
    target: Target
    status: CollectStatus
    status_reason: str | None = Field(default=None, description="Why not ok, in one line.")
    started: datetime
    finished: datetime
    bundle: str | None = Field(default=None, description="Path of the evidence bundle.")
    host_key: HostKeySeen | None = None
    facts: Facts = Field(default_factory=Facts)
    findings: list[Finding] = Field(default_factory=list, description="Worst first.")
    sections: list[SectionResult] = Field(default_factory=list)
    timeline: list[TimelineEvent] = Field(
        default_factory=list, description="Everything dated, oldest first, UTC."
    )

    @model_validator(mode="after")
    def _host_text_redacted(self) -> HostReport:
        """Whatever the host said reaches a report, JSON, history or a pack redacted,
        however the report was made (analysis, a saved report.json, a sweep's row)."""
        redact_fields(self, ("status_reason", "facts", "findings", "timeline"))
        return self

    @property
    def worst(self) -> Severity | None:
        return Severity.worst(finding.severity for finding in self.findings)

    def incomplete_sections(self) -> list[SectionResult]:
        return [s for s in self.sections if s.problem() is not None]
