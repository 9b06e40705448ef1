"""Rules that need more than one probe's facts, one module per question they answer."""

from __future__ import annotations

from collections.abc import Callable

from forensics.core.facts import Facts
from forensics.core.models import Finding
from forensics.core.probe import RuleContext
from forensics.judge.rules import collection, gpu_errors, log_end, oom

Rule = Callable[[Facts, RuleContext], list[Finding]]

CROSS_RULES: tuple[Rule, ...] = (
    collection.section_problems,
    oom.oom_verdict,
    gpu_errors.gpu_errors,
    log_end.log_ended_early,
)
