"""How close is a cgroup's memory to its limit, and what holds it?

- ``cgroup.memory_near_limit``: the working set against the limit that bites, wherever on
  the path it is set.
- ``cgroup.kernel_memory_high``: the kernel memory that RSS-based budgets miss.
- ``memory.pressure_high`` per v2 cgroup (PSI), worded as the memory probe words it.

Thresholds come from ``CollectOptions.thresholds``.
"""

from __future__ import annotations

from forensics.core.models import Finding, MemoryThresholds, Severity
from forensics.core.probe import RuleContext
from forensics.core.thresholds import severity_above
from forensics.core.units import GIB, gib
from forensics.probes.cgroup import CgroupCounters, CgroupFacts
from forensics.probes.memory_rules import pressure_finding

# Below this usage a cgroup's kernel share is noise (a shell's page tables), not a finding.
KERNEL_SHARE_MIN_USAGE = 256 << 20


def rules(facts: CgroupFacts, context: RuleContext) -> list[Finding]:
    thresholds = context.options.thresholds
    return (
        near_limit(facts, thresholds)
        + kernel_memory(facts, thresholds)
        + cgroup_pressure(facts, thresholds)
    )


def near_limit(cgroups: CgroupFacts, thresholds: MemoryThresholds) -> list[Finding]:
    findings = []
    for counters in cgroups.cgroups:
        judged = _limit_to_judge(cgroups, counters)
        if judged is None or counters.working_set_bytes is None:
            continue
        limit, set_by = judged
        percent = 100 * counters.working_set_bytes / limit
        severity = severity_above(
            percent, thresholds.near_limit_warning_percent, thresholds.near_limit_critical_percent
        )
        if severity is not None:
            findings.append(
                _near_limit_finding(cgroups, counters, limit, set_by, percent, severity)
            )
    return findings


def _limit_to_judge(cgroups: CgroupFacts, counters: CgroupCounters) -> tuple[int, str] | None:
    """This cgroup's own limit, or, at the top of what we see, a limit that v1's
    hierarchical_memory_limit reveals on an ancestor we cannot see."""
    if counters.limit_bytes:
        return counters.limit_bytes, counters.cgroup
    top_of_view = len(cgroups.path_to_root(counters)) == 1
    if counters.effective_limit_above_view and top_of_view and counters.effective_limit_bytes:
        return counters.effective_limit_bytes, "an ancestor outside this view"
    return None


def _near_limit_finding(
    cgroups: CgroupFacts,
    counters: CgroupCounters,
    limit: int,
    set_by: str,
    percent: float,
    severity: Severity,
) -> Finding:
    working_set = counters.working_set_bytes or 0
    usage = counters.usage_bytes or 0
    inactive = counters.inactive_file_bytes
    usage_file = "memory.current" if counters.version == 2 else "memory.usage_in_bytes"
    limit_file = "memory.max" if counters.version == 2 else "memory.limit_in_bytes"
    cache_key = "inactive_file" if counters.version == 2 else "total_inactive_file"
    above = set_by != counters.cgroup
    if inactive is None:
        usage_words = f"{usage_file} {gib(usage)} (memory.stat not visible: page cache included)"
    else:
        usage_words = (
            f"{usage_file} {gib(usage)} minus {gib(inactive)} of inactive page cache "
            f"({cache_key}) that the kernel can drop first"
        )
    limit_words = (
        f"set by {set_by} (v1 memory.stat hierarchical_memory_limit; only this cgroup's "
        "usage is visible, so the real share is at least this)"
        if above
        else f"set by {set_by} itself ({limit_file})"
    )
    kernel = ""
    if counters.kernel_bytes:
        kernel = f" Of the usage, {gib(counters.kernel_bytes)} is kernel memory{_parts(counters)}."
    inside = _inside(cgroups, counters)
    subject = {
        "cgroup": counters.cgroup,
        "version": counters.version,
        "limit_set_by": set_by,
        "working_set_gib": round(working_set / GIB, 3),
        "usage_gib": round(usage / GIB, 3),
        "limit_gib": round(limit / GIB, 3),
        "percent": round(percent, 1),
    }
    if counters.peak_bytes is not None:
        subject["peak_gib"] = round(counters.peak_bytes / GIB, 3)
    keys = ("limit", "hierarchical_limit", "usage", "inactive_file", "kernel")
    return Finding(
        id="cgroup.memory_near_limit",
        severity=severity,
        title=(
            f"Memory cgroup {counters.cgroup} is at {percent:.1f}% of its {gib(limit)} limit "
            f"({gib(working_set)} in use)"
        ),
        explanation=(
            f"Working set {gib(working_set)} = {usage_words}. The limit is {gib(limit)}, "
            f"{limit_words}.{kernel} When the working set reaches the limit the kernel "
            "reclaims what it can, then the OOM killer kills a process inside this cgroup. "
            f"Inside it: {inside}."
            + (f" Peak so far: {gib(counters.peak_bytes)}." if counters.peak_bytes else "")
        ),
        next_steps=[
            f"Watch it move: forensics watch TARGET --cgroup {counters.path} --every 2s",
            f"See what the usage is made of: cat {counters.path}/memory.stat",
            "If the job needs more, raise the limit (container/instance memory) or shrink the "
            "job (batch size, pinned pools); budget for kernel memory, not just RSS.",
        ],
        subject=subject,
        evidence=[counters.evidence[key] for key in keys if key in counters.evidence],
    )


def kernel_memory(cgroups: CgroupFacts, thresholds: MemoryThresholds) -> list[Finding]:
    findings = []
    for counters in _budgets(cgroups):
        kernel, usage = counters.kernel_bytes, counters.usage_bytes
        if not kernel or not usage:
            continue
        share = 100 * kernel / usage
        large = kernel >= thresholds.kernel_memory_gib * GIB
        big_share = usage >= KERNEL_SHARE_MIN_USAGE and share >= thresholds.kernel_memory_percent
        if not (large or big_share):
            continue
        tight = _nearest_limit_percent(cgroups, counters)
        severity = (
            Severity.warning
            if tight is not None and tight >= thresholds.near_limit_warning_percent
            else Severity.info
        )
        where = (
            f"{counters.path}/memory.stat" if counters.version == 2
            else f"{counters.path}/memory.kmem.usage_in_bytes"
        )  # fmt: skip
        tight_words = (
            f" The cgroup path is at {tight:.1f}% of its limit, so this memory matters now."
            if tight is not None
            else ""
        )
        findings.append(
            Finding(
                id="cgroup.kernel_memory_high",
                severity=severity,
                title=(
                    f"Kernel memory in cgroup {counters.cgroup} is {gib(kernel)} "
                    f"({share:.1f}% of its usage){_parts(counters, 3)}"
                ),
                explanation=(
                    f"{gib(kernel)} of the cgroup's {gib(usage)} is kernel memory charged to it: "
                    "page tables, slab, kernel stacks, per-cpu data, socket buffers, vmalloc "
                    "and driver allocations (other_kernel = memory.stat kernel minus the named "
                    "parts). It counts against the limit but appears in no process's RSS, so "
                    f"budgets made from RSS miss it.{tight_words}"
                    + (" cgroup v1 does not split it into parts." if counters.version == 1 else "")
                ),
                next_steps=[
                    f"See the parts: cat {where}",
                    "Large pagetables: many processes mapping large memory (use huge pages); "
                    "large slab: `slabtop -o` on the host; large other_kernel: GPU/RDMA "
                    "driver allocations.",
                ],
                subject={
                    "cgroup": counters.cgroup,
                    "kernel_gib": round(kernel / GIB, 3),
                    "usage_gib": round(usage / GIB, 3),
                    "percent_of_usage": round(share, 1),
                    "parts_gib": {k: round(v / GIB, 3) for k, v in counters.kernel_parts.items()},
                },
                evidence=[counters.evidence[k] for k in ("kernel",) if k in counters.evidence],
            )
        )
    return findings


def _budgets(cgroups: CgroupFacts) -> list[CgroupCounters]:
    """For each cgroup we looked at, the visible cgroup whose limit bounds it, else itself:
    kernel memory matters against the budget it is charged to, and is judged once there."""
    by_path = {(c.version, c.cgroup): c for c in cgroups.cgroups}
    budgets: dict[tuple[int, str], CgroupCounters] = {}
    for counters in cgroups.looked_at():
        setter = by_path.get((counters.version, counters.effective_limit_cgroup or ""))
        budget = setter or counters
        budgets[(budget.version, budget.cgroup)] = budget
    return list(budgets.values())


def cgroup_pressure(cgroups: CgroupFacts, thresholds: MemoryThresholds) -> list[Finding]:
    findings = []
    for counters in cgroups.looked_at():
        if counters.pressure is None:
            continue
        finding = pressure_finding(
            counters.pressure,
            f"cgroup {counters.cgroup} ({counters.path}/memory.pressure)",
            counters.cgroup,
            counters.evidence.get("pressure"),
            thresholds,
            f"cat {counters.path}/memory.pressure",
        )
        findings += [finding] if finding else []
    return findings


def _nearest_limit_percent(cgroups: CgroupFacts, counters: CgroupCounters) -> float | None:
    """The highest working-set share of a limit on this cgroup's path, or None."""
    shares = []
    for node in cgroups.path_to_root(counters):
        judged = _limit_to_judge(cgroups, node)
        if judged is not None and node.working_set_bytes is not None:
            shares.append(100 * node.working_set_bytes / judged[0])
    return max(shares) if shares else None


def _parts(counters: CgroupCounters, count: int = 4) -> str:
    parts = list(counters.kernel_parts.items())[:count]
    if not parts:
        return ""
    return ": " + ", ".join(f"{name} {gib(value)}" for name, value in parts)


def _inside(cgroups: CgroupFacts, limited: CgroupCounters) -> str:
    """Which of the cgroups we looked at for a reason sit at or below ``limited``."""
    words = []
    for counters in cgroups.looked_at():
        if limited not in cgroups.path_to_root(counters):
            continue
        for role in counters.roles:
            if role == "focus":
                words += [f"focus process {p.pid} ({p.name})" for p in cgroups.focus_in(counters)]
            elif role != "ancestor":
                words.append({"root": "the root of this view", "pid1": "PID 1",
                              "self": "the collecting shell"}[role])  # fmt: skip
    return ", ".join(dict.fromkeys(words)) or "none of the processes we looked at"
