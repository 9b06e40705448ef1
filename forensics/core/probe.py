"""The contract every probe in ``probes/`` fulfils.

A probe declares the sections it runs on the host, turns their raw text into pydantic facts
with a pure ``parse``, and may judge its own facts with ``rules``, either beside the parser
or, when they need room, in ``probes/<name>_rules.py``, which the probe names by
``rules_module`` (that module imports the probe, never the other way, so no import loop).
Work that runs a local program on the facts (ShellCheck) is ``examine``: it runs at
analysis time, after ``parse``, and its results are facts, so that rules stay pure.
Judgements that need several probes' facts live in ``forensics/judge/rules/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from pydantic import BaseModel, Field

from forensics.core.models import CollectOptions, Finding, SectionResult, SectionSpec
from forensics.core.timeline_event import TimelineEvent


@dataclass(frozen=True)
class Captured:
    """One section's outcome as the parsers see it: its result and its text.

    ``text`` is the raw bytes decoded as UTF-8 with invalid bytes replaced; the exact bytes
    stay in the bundle.
    """

    result: SectionResult
    text: str
    stderr: str = ""

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @classmethod
    def complete(cls, section: str, text: str) -> Captured:
        """A section that finished normally with ``text``: how a sample feeds a parser.

        >>> Captured.complete("memory", "MemTotal: 12 kB\\n").result.usable
        True
        """
        result = SectionResult(
            name=section,
            command="",
            exit_status=0,
            duration_s=0.1,
            bytes=len(text.encode()),
            truncated=False,
            timed_out=False,
            finished=True,
        )
        return cls(result=result, text=text)


Captures = Mapping[str, Captured]


class ProbeFacts(BaseModel):
    """What every probe's facts say: whether the probe could read its evidence at all."""

    unavailable: str | None = Field(
        default=None, description="Why the probe's evidence could not be read; None when it was."
    )


FactsT = TypeVar("FactsT", bound=ProbeFacts)


@dataclass(frozen=True)
class RuleContext:
    """What a rule may know besides facts: the operator's options and how each section went."""

    options: CollectOptions
    sections: Mapping[str, SectionResult]
    collected_at: datetime


def _no_rules(facts: BaseModel, context: RuleContext) -> list[Finding]:
    return []


def _as_parsed(facts: FactsT) -> FactsT:
    return facts


def _no_events(facts: BaseModel) -> list[TimelineEvent]:
    return []


@dataclass(frozen=True)
class Probe(Generic[FactsT]):
    """A probe: what it runs (``sections``), how it reads it (``parse``, pure), the
    findings its own facts support (``rules``, pure; or ``rules_module``'s ``rules``), the
    dated events they hold (``timeline``), and where it goes: ``run_order`` on the host
    (cheap and fast first, so a deadline late in the run loses the least; a section may
    instead open or close the whole host script, ``SectionSpec.place``: the first process
    snapshot opens it and the second closes it, so the other probes run during the gap)
    and ``report_order`` in a host report (lower first). Ties go by name. A probe whose
    evidence the client produces (``forensics arm``'s recorder) runs nothing on the host:
    its ``sections`` are empty and ``client_sections`` names what it reads."""

    name: str
    run_order: int
    report_order: int
    sections: Callable[[CollectOptions], list[SectionSpec]]
    facts_model: type[FactsT]
    parse: Callable[[Captures, CollectOptions], FactsT]
    rules: Callable[[FactsT, RuleContext], list[Finding]] = field(default=_no_rules)
    rules_module: str | None = None
    examine: Callable[[FactsT], FactsT] = field(default=_as_parsed)
    timeline: Callable[[FactsT], list[TimelineEvent]] = field(default=_no_events)
    client_sections: tuple[str, ...] = ()

    def section_names(self, options: CollectOptions) -> list[str]:
        """Every section this probe reads: those it runs on the host, then those the
        client writes into the bundle itself (``client_sections``, e.g. the flight
        recorder's); the host script never carries the latter."""
        return [spec.name for spec in self.sections(options)] + list(self.client_sections)

    def events(self, facts: FactsT | None) -> list[TimelineEvent]:
        """The dated events in this probe's facts; none when it did not run."""
        return [] if facts is None else self.timeline(facts)

    def judge(self, facts: FactsT, context: RuleContext) -> list[Finding]:
        """Every finding of this probe's own rules on ``facts``."""
        findings = self.rules(facts, context)
        if self.rules_module is not None:
            module = importlib.import_module(self.rules_module)
            module_rules: Callable[[FactsT, RuleContext], list[Finding]] = module.rules
            findings = findings + module_rules(facts, context)
        return findings


def open_section(captures: Captures, section: str) -> tuple[Captured | None, str | None]:
    """The opening of every ``parse``: the section's capture, and why it is not complete
    evidence (None when it is). The capture is None when there is nothing to read (not
    collected, or stopped before it wrote anything); the reason then says why.

    >>> open_section({}, "memory")
    (None, 'section memory was not collected')
    """
    reason = unavailable_reason(captures, section)
    captured = captures.get(section)
    if captured is None or (reason and not captured.text):
        return None, reason
    return captured, reason


def unavailable_reason(captures: Captures, section: str) -> str | None:
    """Why a section cannot be read as complete evidence, or None when it can.

    >>> unavailable_reason({}, "kernel_log")
    'section kernel_log was not collected'
    """
    captured = captures.get(section)
    if captured is None:
        return f"section {section} was not collected"
    if not captured.result.usable:
        return f"section {section} {captured.result.problem()}"
    return None
