"""Fleet-wide patterns: hosts that share a finding, and what they have in common.

"Is this one host, or every host on driver 550?" For each finding (an Xid or other coded
finding counts per code: ``gpu.xid 79``) seen on at least two collected hosts, each fact
the sweep read (driver version, GPU model, kernel release, OS, container runtime, inventory
tags, which carry the vast.ai ids) is compared between the hosts with the finding and the
others. A value is named when every host with the finding that read the fact has it and
it is rarer among the others::

    gpu.xid 79 on 12 of 64 hosts; all 12 run driver 550.54.14, 0 of the 52 others do

"all" and "none" are said only when the fact was read on every host counted; otherwise the
numbers say how many were read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from forensics.fleet.fingerprint import TrackedFinding
from forensics.fleet.report import FleetPattern, HostRun, SharedFact
from forensics.judge.host_report import HostReport
from forensics.probes.gpu import GpuFacts
from forensics.probes.system import SystemFacts

MIN_HOSTS = 2
MAX_FACTS_PER_PATTERN = 3
_DETAIL_KEYS = ("code",)
"""Subject keys that split one finding id into kinds worth grouping apart (an Xid's code)."""

TRAITS = {
    "driver": "run driver {}",
    "gpu_model": "have a {}",
    "kernel": "run kernel {}",
    "os": "run {}",
    "container": "run in {}",
}
"""The facts a sweep keeps of each host (``HostSummary.traits``), and how to say that a
host has a value."""
FACTS = {**TRAITS, "tag": "are tagged {}"}
"""What patterns compare: the traits, and the inventory's tags."""


def host_traits(report: HostReport) -> dict[str, list[str]]:
    """The values of each of ``TRAITS`` on the host; a fact it could not read is absent.

    >>> from datetime import UTC, datetime
    >>> from forensics.core.facts import Facts
    >>> from forensics.core.models import Target
    >>> now = datetime(2026, 11, 29, tzinfo=UTC)
    >>> report = HostReport(tool_version="0", target=Target(name="a"), status="ok",
    ...     started=now, finished=now, facts=Facts(system=SystemFacts(
    ...         kernel_release="6.8.0-49-generic", os_name="Ubuntu 24.04.1 LTS")))
    >>> host_traits(report)
    {'kernel': ['6.8.0-49-generic'], 'os': ['Ubuntu 24.04.1 LTS'], 'container': ['no container']}
    """
    found: dict[str, list[str]] = {}
    gpu = report.facts.of(GpuFacts)
    if gpu is not None and gpu.gpus:
        drivers = sorted({g.driver_version for g in gpu.gpus if g.driver_version})
        models = sorted({g.name for g in gpu.gpus if g.name})
        if drivers:
            found["driver"] = drivers
        if models:
            found["gpu_model"] = models
    system = report.facts.of(SystemFacts)
    if system is not None:
        if system.kernel_release:
            found["kernel"] = [system.kernel_release]
        if system.os_name:
            found["os"] = [system.os_name]
        found["container"] = [system.container or "no container"]
    return found


def _read(run: HostRun, fact: str) -> set[str] | None:
    """The values of one fact on one host; None when the fact was not read there."""
    if fact == "tag":
        return set(run.tags)
    values = run.report.traits.get(fact) if run.report is not None else None
    return set(values) if values else None


def finding_keys(findings: Iterable[TrackedFinding]) -> set[str]:
    """The keys a host's findings group under: the id, plus a code where the subject has one.

    >>> xid = TrackedFinding(fingerprint="f", id="gpu.xid", severity="critical", title="",
    ...     subject={"code": 79, "bus_id": "00000000:3B:00.0"})
    >>> sorted(finding_keys([xid]))
    ['gpu.xid 79']
    """
    keys = set()
    for finding in findings:
        detail = next((finding.subject[k] for k in _DETAIL_KEYS if k in finding.subject), None)
        keys.add(finding.id if detail is None else f"{finding.id} {detail}")
    return keys


def fleet_patterns(hosts: Sequence[HostRun]) -> list[FleetPattern]:
    """The findings at least ``MIN_HOSTS`` collected hosts share, most widespread first,
    each with the facts its hosts have in common."""
    collected = [run for run in hosts if run.status.collected and run.report is not None]
    by_key: dict[str, set[str]] = defaultdict(set)
    for run in collected:
        assert run.report is not None
        for key in finding_keys(run.report.findings):
            by_key[key].add(run.name)
    facts = {run.name: {name: _read(run, name) for name in FACTS} for run in collected}
    patterns = []
    for key, names in by_key.items():
        if len(names) < MIN_HOSTS:
            continue
        others = [run.name for run in collected if run.name not in names]
        shared = _shared_facts(sorted(names), others, facts)
        text = f"{key} on {len(names)} of {len(collected)} hosts"
        if shared:
            text += "; " + "; ".join(fact.text for fact in shared)
        patterns.append(
            FleetPattern(
                finding=key,
                hosts=sorted(names),
                collected=len(collected),
                shared=shared,
                text=text,
            )
        )
    return sorted(patterns, key=lambda p: (-len(p.hosts), p.finding))


def _shared_facts(
    names: list[str], others: list[str], facts: dict[str, dict[str, set[str] | None]]
) -> list[SharedFact]:
    found = []
    for fact, verb in FACTS.items():
        read_with = [facts[name][fact] for name in names if facts[name][fact] is not None]
        read_others = [facts[name][fact] for name in others if facts[name][fact] is not None]
        if len(read_with) < MIN_HOSTS:
            continue
        common = set.intersection(*(values or set() for values in read_with))
        for value in sorted(common):
            among_others = sum(1 for values in read_others if values and value in values)
            if read_others and among_others / len(read_others) >= 1.0:
                continue  # every other host has it too: it tells nothing apart
            found.append(
                (
                    among_others / len(read_others) if read_others else 0.0,
                    SharedFact(
                        fact=fact,
                        value=value,
                        with_finding=len(read_with),
                        read_with_finding=len(read_with),
                        others=among_others,
                        read_others=len(read_others),
                        others_total=len(others),
                        text=_words(
                            verb.format(value),
                            len(names),
                            len(read_with),
                            among_others,
                            len(read_others),
                            len(others),
                        ),
                    ),
                )
            )
    found.sort(key=lambda pair: (pair[0], pair[1].fact, pair[1].value))
    return [fact for _, fact in found[:MAX_FACTS_PER_PATTERN]]


def _words(
    has: str, total: int, read: int, others: int, read_others: int, others_total: int
) -> str:
    """How many with the finding have the value and how many of the others do.

    >>> _words("run driver 550.54.14", 12, 12, 0, 52, 52)
    'all 12 run driver 550.54.14, 0 of the 52 others do'
    >>> for part in _words("run driver 550.54.14", 12, 10, 3, 40, 52).split(", "):
    ...     print(part)
    10 of 12 run driver 550.54.14 (not read on 2)
    3 of the 40 others where it was read do (not read on 12)
    >>> _words("run kernel 6.8.0", 5, 5, 0, 0, 0)
    'all 5 run kernel 6.8.0'
    """
    first = (
        f"all {total} {has}"
        if read == total
        else f"{read} of {total} {has} (not read on {total - read})"
    )
    if others_total == 0:
        return first
    if read_others == others_total:
        second = f"{others} of the {others_total} others do"
    else:
        second = (
            f"{others} of the {read_others} others where it was read do "
            f"(not read on {others_total - read_others})"
        )
    return f"{first}, {second}"
