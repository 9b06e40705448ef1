"""Was the collection itself complete? Every section that failed, timed out or was cut is
said out loud, so that nobody reads a missing answer as a negative one."""

from __future__ import annotations

from forensics.core.evidence import cite
from forensics.core.facts import CrossRule, Facts
from forensics.core.models import Finding, Severity
from forensics.core.probe import RuleContext


def section_problems(facts: Facts, context: RuleContext) -> list[Finding]:
    findings = []
    for result in context.sections.values():
        problem = result.problem()
        if problem is None:
            continue
        findings.append(
            Finding(
                id="collection.section_incomplete",
                severity=Severity.warning,
                title=f"Could not fully check: section {result.name} {problem}",
                explanation=(
                    f"The section '{result.name}' {problem}. Whatever depends on it is reported "
                    "as unknown, not as absent."
                ),
                next_steps=[
                    "Re-run with a longer --timeout if the host was slow, or run the section's "
                    f"command by hand on the host: {result.command.splitlines()[0][:120]}"
                ],
                subject={"section": result.name, "problem": problem},
                evidence=[
                    cite(
                        result.name,
                        1,
                        f"exit={result.exit_status} bytes={result.bytes} "
                        f"timed_out={result.timed_out} truncated={result.truncated}",
                    )
                ],
            )
        )
    return findings


RULES: tuple[CrossRule, ...] = (section_problems,)
