"""How much memory does the host have left, and how much of it is pinned or stalling?

- ``memory.available_low``: MemAvailable against MemTotal.
- ``memory.locked_large``: Mlocked / Unevictable (pinned memory, which comes back slowly or
  not at all after a kill).
- ``memory.pressure_high``: PSI, host-wide here; the cgroup probe's rules raise it per v2
  cgroup with ``pressure_finding``.

Thresholds come from ``CollectOptions.thresholds``.
"""

from __future__ import annotations

from forensics.core.models import EvidenceRef, Finding, MemoryThresholds, Severity
from forensics.core.pressure import Pressure
from forensics.core.probe import RuleContext
from forensics.core.thresholds import severity_above
from forensics.core.units import GIB, gib
from forensics.probes.memory import MemoryFacts


def rules(facts: MemoryFacts, context: RuleContext) -> list[Finding]:
    thresholds = context.options.thresholds
    findings = available_low(facts, thresholds) + locked_large(facts, thresholds)
    if facts.pressure is not None:
        where = "the host (/proc/pressure/memory; host-wide even inside a container)"
        evidence = facts.evidence.get("pressure")
        finding = pressure_finding(
            facts.pressure, where, "the host", evidence, thresholds, "cat /proc/pressure/memory"
        )
        findings += [finding] if finding else []
    return findings


def pressure_finding(
    pressure: Pressure,
    where: str,
    scope: str,
    evidence: EvidenceRef | None,
    thresholds: MemoryThresholds,
    command: str,
) -> Finding | None:
    some = pressure.some.avg10 if pressure.some else 0.0
    full = pressure.full.avg10 if pressure.full else 0.0
    if full >= thresholds.pressure_full_critical_avg10:
        severity = Severity.critical
    elif full >= thresholds.pressure_full_avg10 or some >= thresholds.pressure_some_avg10:
        severity = Severity.warning
    else:
        return None
    return Finding(
        id="memory.pressure_high",
        severity=severity,
        title=(
            f"Memory pressure on {scope}: some task stalled {some:.1f}% and all tasks "
            f"{full:.1f}% of the last 10 s"
        ),
        explanation=(
            f"Pressure stall information for {where}: tasks spent {some:.1f}% of the last "
            f"10 s waiting for memory (some avg10) and {full:.1f}% with every non-idle task "
            "stalled at once (full avg10). That is time lost to reclaim and refaults: the "
            "memory is too small for what runs, even if nothing was killed yet."
        ),
        next_steps=[
            f"See whether it persists: {command} (avg60, avg300 are longer windows)",
            "Watch memory while it happens: forensics watch TARGET --every 2s",
        ],
        subject={"scope": scope, "some_avg10": some, "full_avg10": full},
        evidence=[evidence] if evidence else [],
    )


def available_low(memory: MemoryFacts, thresholds: MemoryThresholds) -> list[Finding]:
    total, available = memory.total_bytes, memory.available_bytes
    if not total or available is None:
        return []
    percent = 100 * available / total
    severity = severity_above(
        100 - percent,
        100 - thresholds.available_warning_percent,
        100 - thresholds.available_critical_percent,
    )
    if severity is None:
        return []
    return [
        Finding(
            id="memory.available_low",
            severity=severity,
            title=(
                f"Host memory nearly exhausted: {gib(available)} available of {gib(total)} "
                f"({percent:.1f}%)"
            ),
            explanation=(
                f"MemAvailable, the kernel's estimate of what can be allocated without "
                f"swapping, is {gib(available)} of MemTotal {gib(total)}. Below a few percent "
                "the global OOM killer runs, and it may kill a process in any container. "
                "Inside a container these are the host's figures (unless LXCFS rewrites "
                "them): other tenants may be the ones using it."
            ),
            next_steps=[
                "Who holds it: ps -eo pid,rss,comm --sort=-rss | head on the host; "
                "locked and shared memory: grep -E 'Mlocked|Unevictable|Shmem' /proc/meminfo",
                "Waiting for memory to come back after a kill? Measure it: "
                "forensics wait TARGET --available '>=NGiB'",
            ],
            subject={
                "available_gib": round(available / GIB, 3),
                "total_gib": round(total / GIB, 3),
                "percent": round(percent, 1),
            },
            evidence=[
                memory.evidence[key]
                for key in ("MemTotal", "MemAvailable")
                if key in memory.evidence
            ],
        )
    ]


def locked_large(memory: MemoryFacts, thresholds: MemoryThresholds) -> list[Finding]:
    total = memory.total_bytes
    locked = max(memory.mlocked_bytes or 0, memory.unevictable_bytes or 0)
    if not total or not locked:
        return []
    percent = 100 * locked / total
    if percent >= thresholds.locked_warning_percent:
        severity = Severity.warning
    elif percent >= thresholds.locked_percent:
        severity = Severity.info
    else:
        return []
    return [
        Finding(
            id="memory.locked_large",
            severity=severity,
            title=(
                f"{gib(locked)} of host memory is locked or unevictable ({percent:.1f}% of "
                f"{gib(total)})"
            ),
            explanation=(
                f"Mlocked {gib(memory.mlocked_bytes or 0)}, Unevictable "
                f"{gib(memory.unevictable_bytes or 0)}. These pages cannot be reclaimed or "
                "swapped: mlock()ed buffers, locked shared memory, and pinned pools such as "
                "CUDA host-pinned memory or RDMA registrations (when their driver locks "
                "them). They come back only when the last mapping is gone: after a kill, "
                "a zombie whose threads still run, or a slow teardown, keeps them for a while."
            ),
            next_steps=[
                "Which processes lock memory: "
                "grep -l '^VmLck:[[:space:]]*[1-9]' /proc/[0-9]*/status",
                "After killing the owner, measure the release instead of guessing: "
                "forensics wait TARGET --available '>=NGiB'",
            ],
            subject={
                "mlocked_gib": round((memory.mlocked_bytes or 0) / GIB, 3),
                "unevictable_gib": round((memory.unevictable_bytes or 0) / GIB, 3),
                "total_gib": round(total / GIB, 3),
                "percent": round(percent, 1),
            },
            evidence=[
                memory.evidence[key]
                for key in ("Mlocked", "Unevictable", "MemTotal")
                if key in memory.evidence
            ],
        )
    ]
