"""Which findings are the same problem seen again: fingerprints, and what changed between runs.

A fingerprint is the finding id, the host, and the subject's stable keys: the ones that
name the thing (a pid, a section, a path, a GPU), not measurements that move from run to
run (bytes, percentages, states). A subject key counts as stable when its name is one of
``IDENTITY_KEYS`` or ends in ``_pid``, ``_path`` or ``_name``; a subject with none of those
is fingerprinted on all its scalar values. A probe that wants a key to identify its finding
names it that way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from forensics.core.models import Finding, SectionResult, Severity

IDENTITY_KEYS = frozenset(
    {
        "pid", "name", "comm", "section", "path", "file", "script", "line", "cgroup",
        "gpu", "gpu_index", "bus_id", "uuid", "device", "mount", "unit", "signal",
        "start_time", "started_at", "container", "log",
    }
)  # fmt: skip
_IDENTITY_SUFFIXES = ("_pid", "_path", "_name")


class TrackedFinding(BaseModel):
    """A finding reduced to what history keeps and compares."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fingerprint: str
    id: str
    severity: Severity
    title: str
    subject: dict[str, Any] = Field(default_factory=dict)
    sections: list[str] = Field(
        default_factory=list, description="The raw sections its evidence comes from."
    )


class Changes(BaseModel):
    """What changed on one host since its previous run (or between two bundles)."""

    model_config = ConfigDict(extra="forbid")

    previous_run: datetime | None = Field(
        default=None, description="When the run compared against started; None: first run."
    )
    previous_sweep: str | None = None
    new: list[TrackedFinding] = Field(default_factory=list)
    still: list[TrackedFinding] = Field(default_factory=list)
    resolved: list[TrackedFinding] = Field(default_factory=list)
    not_rechecked: list[TrackedFinding] = Field(
        default_factory=list,
        description="Present before, absent now, but this run was partial: not known resolved.",
    )


def stable_subject(subject: dict[str, Any]) -> dict[str, Any]:
    """The part of a subject that names the thing.

    >>> stable_subject({"pid": 4242, "name": "cuzk", "threads": 3, "state": "Zl"})
    {'pid': 4242, 'name': 'cuzk'}
    >>> stable_subject({"section": "kernel_log", "problem": "was cut at 262144 bytes"})
    {'section': 'kernel_log'}
    >>> stable_subject({"limit": 1024, "zones": [1, 2]})
    {'limit': 1024}
    """
    chosen = {
        key: value
        for key, value in subject.items()
        if key in IDENTITY_KEYS or key.endswith(_IDENTITY_SUFFIXES)
    }
    if chosen:
        return chosen
    return {
        key: value
        for key, value in subject.items()
        if isinstance(value, str | int | float | bool) or value is None
    }


def fingerprint(finding: Finding, host: str) -> str:
    """sha256 of id, host and the stable subject, shortened: equal for the same problem.

    >>> from forensics.core.models import Severity
    >>> a = Finding(id="process.zombie", severity=Severity.warning, title="t", explanation="e",
    ...     subject={"pid": 7, "state": "Z"})
    >>> b = a.model_copy(update={"subject": {"pid": 7, "state": "Zl"}, "title": "other"})
    >>> fingerprint(a, "gpu-a") == fingerprint(b, "gpu-a") != fingerprint(a, "gpu-b")
    True
    """
    key = json.dumps(
        [finding.id, host, stable_subject(finding.subject)], sort_keys=True, default=str
    )
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def track(findings: Iterable[Finding], host: str) -> list[TrackedFinding]:
    """Fingerprint each finding once; repeats of the same problem count once."""
    tracked: dict[str, TrackedFinding] = {}
    for finding in findings:
        mark = fingerprint(finding, host)
        tracked.setdefault(
            mark,
            TrackedFinding(
                fingerprint=mark,
                id=finding.id,
                severity=finding.severity,
                title=finding.title,
                subject=finding.subject,
                sections=sorted({evidence.section for evidence in finding.evidence}),
            ),
        )
    return list(tracked.values())


def compare(
    previous: Sequence[TrackedFinding] | None,
    current: Sequence[TrackedFinding],
    checked_sections: set[str],
    complete: bool,
) -> Changes:
    """New, still present and resolved findings between two runs of one host.

    ``previous`` None means there is nothing to compare with: everything is new. A finding
    that is absent now counts as resolved only if this run read every section its evidence
    came from in full (``checked_sections``), or, for a finding without evidence, if the
    whole run was ``complete``; otherwise it may only be unseen: ``not_rechecked``.

    >>> from forensics.core.models import Severity
    >>> def seen(mark, section):
    ...     return TrackedFinding(fingerprint=mark, id="a.b", severity=Severity.info, title="",
    ...                           sections=[section])
    >>> changes = compare([seen("1", "ps"), seen("2", "ps"), seen("3", "dmesg")],
    ...                   [seen("2", "ps"), seen("4", "ps")], {"ps"}, complete=False)
    >>> [[f.fingerprint for f in kind] for kind in
    ...  (changes.new, changes.still, changes.resolved, changes.not_rechecked)]
    [['4'], ['2'], ['1'], ['3']]
    """
    before = {finding.fingerprint: finding for finding in previous or ()}
    now = {finding.fingerprint: finding for finding in current}
    changes = Changes()
    for mark, finding in now.items():
        (changes.still if mark in before else changes.new).append(finding)
    for mark, finding in before.items():
        if mark in now:
            continue
        rechecked = set(finding.sections) <= checked_sections if finding.sections else complete
        (changes.resolved if rechecked else changes.not_rechecked).append(finding)
    return changes


def fully_read_sections(sections: Iterable[SectionResult]) -> set[str]:
    """The sections whose output is complete: finished, in time, and not cut."""
    return {section.name for section in sections if section.problem() is None}
