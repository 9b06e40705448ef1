"""The kernel log corpus of tests/samples/kernel/corpus: each excerpt, the findings it must
raise, and a judge that runs the section parser and the rules on it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from forensics.core.facts import Facts
from forensics.core.models import CollectOptions, Finding
from forensics.core.probe import RuleContext
from forensics.judge.rules import gpu_errors, oom
from forensics.probes import kernel_log_rules
from tests.kernel_samples import SAMPLES, parse_section, section_text

CORPUS = SAMPLES / "corpus"
# The families a kernel log decides; the OOM verdict (ruled out / inconclusive) also needs
# the counters, which the corpus does not have.
FAMILIES = ("oom.killed", "kernel.", "gpu.")


@dataclass(frozen=True)
class Expected:
    finding_id: str
    subject: dict[str, str]

    def matches(self, finding: Finding) -> bool:
        return finding.id == self.finding_id and all(
            _text(finding.subject.get(key)) == value for key, value in self.subject.items()
        )

    def __str__(self) -> str:
        pairs = " ".join(f"{key}={value}" for key, value in self.subject.items())
        return f"{self.finding_id} {pairs}".strip()


@dataclass(frozen=True)
class Sample:
    name: str
    header: dict[str, str]
    log: str
    expected: list[Expected]

    @classmethod
    def read(cls, path: Path) -> Sample:
        header: dict[str, str] = {}
        lines = path.read_text().splitlines(keepends=True)
        while lines and lines[0].startswith("# "):
            key, _, value = lines.pop(0)[2:].partition(":")
            header[key.strip()] = value.strip()
        expected = [
            _expected(line)
            for line in path.with_suffix(".expected").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        return cls(path.stem, header, "".join(lines), expected)

    def findings(self) -> list[Finding]:
        source = self.header.get("source", "dmesg")
        text = section_text(self.log, source, utc_offset=self.header.get("utc_offset", "+0000"))
        log = parse_section(text)
        facts = Facts(kernel_log=log)
        context = RuleContext(options=CollectOptions(), sections={}, collected_at=datetime.now(UTC))
        found = oom.oom_verdict(facts, context) + kernel_log_rules.rules(log, context)
        found += gpu_errors.gpu_errors(facts, context)
        return [f for f in found if f.id.startswith(FAMILIES)]

    def misses(self) -> list[str]:
        """What went wrong, in words: expected findings not raised, and unexpected ones."""
        left = self.findings()
        problems = []
        for expected in self.expected:
            hit = next((f for f in left if expected.matches(f)), None)
            if hit is None:
                problems.append(f"missing: {expected}")
            else:
                left.remove(hit)
        problems += [f"unexpected: {f.id} {f.subject}" for f in left]
        return problems


def samples() -> list[Sample]:
    return [Sample.read(path) for path in sorted(CORPUS.glob("*.log"))]


def _expected(line: str) -> Expected:
    finding_id, _, rest = line.strip().partition(" ")
    subject: dict[str, str] = {}
    key = ""
    for word in rest.split(" "):
        if "=" in word and word.split("=", 1)[0].isidentifier():
            key, _, value = word.partition("=")
            subject[key] = value
        elif key:
            subject[key] += " " + word
    return Expected(finding_id, subject)


def _text(value: Any) -> str:
    return "None" if value is None else str(value)
