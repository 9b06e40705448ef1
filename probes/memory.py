"""memory: the host's memory as the kernel counts it, its pressure, and swap.

Runs ``memory.sh`` on the host (one section, in the script's shell: no process)::

    ==> /proc/meminfo <==
    MemTotal:       1584842752 kB
    MemFree:          10485760 kB
    MemAvailable:     41943040 kB
    ...
    Mlocked:         419430400 kB
    HugePages_Total:       0
    Hugepagesize:       2048 kB
    ==> /proc/pressure/memory <==
    some avg10=31.50 avg60=12.02 avg300=3.10 total=98811234
    full avg10=8.25 avg60=2.00 avg300=0.51 total=21000000
    ==> /proc/swaps <==
    Filename                                Type            Size            Used    Priority

and returns ``MemoryFacts(total_bytes=1622878978048, available_bytes=42949672960,
mlocked_bytes=429496729600, pressure=Pressure(some=..., full=...), swap_devices=0, ...)``.

Inside a container /proc/meminfo and /proc/pressure are the host's, unless LXCFS
rewrites them; the cgroup probe has the container's own figures.
"""

from __future__ import annotations

from pydantic import Field

from forensics.core.evidence import cite
from forensics.core.models import CollectOptions, EvidenceRef, SectionSpec
from forensics.core.pressure import Pressure, parse_pressure
from forensics.core.probe import Captures, Probe, ProbeFacts, open_section
from forensics.remote.file_dump import DumpedFile, dumped_files
from forensics.remote.host_script import probe_shell

SECTION = "memory"
MEMINFO = "/proc/meminfo"
PRESSURE = "/proc/pressure/memory"
SWAPS = "/proc/swaps"
FILES = (MEMINFO, PRESSURE, SWAPS)
SHELL = probe_shell(__name__, {"files": FILES})

# meminfo key -> MemoryFacts field; values are kB except HugePages_* (page counts).
_SIZES = {
    "MemTotal": "total_bytes",
    "MemFree": "free_bytes",
    "MemAvailable": "available_bytes",
    "Mlocked": "mlocked_bytes",
    "Unevictable": "unevictable_bytes",
    "Shmem": "shmem_bytes",
    "AnonHugePages": "anon_huge_pages_bytes",
    "Hugepagesize": "huge_page_size_bytes",
    "Hugetlb": "hugetlb_bytes",
    "SwapTotal": "swap_total_bytes",
    "SwapFree": "swap_free_bytes",
    "Slab": "slab_bytes",
    "SUnreclaim": "slab_unreclaimable_bytes",
    "KernelStack": "kernel_stack_bytes",
    "PageTables": "page_tables_bytes",
    "SecPageTables": "sec_page_tables_bytes",
    "VmallocUsed": "vmalloc_used_bytes",
    "Percpu": "percpu_bytes",
}
_COUNTS = {
    "HugePages_Total": "huge_pages_total",
    "HugePages_Free": "huge_pages_free",
    "HugePages_Rsvd": "huge_pages_reserved",
    "HugePages_Surp": "huge_pages_surplus",
}


class MemoryFacts(ProbeFacts):
    total_bytes: int | None = None
    free_bytes: int | None = None
    available_bytes: int | None = Field(default=None, description="MemAvailable (3.14+).")
    mlocked_bytes: int | None = None
    unevictable_bytes: int | None = None
    shmem_bytes: int | None = Field(default=None, description="tmpfs, /dev/shm, shared anon.")
    anon_huge_pages_bytes: int | None = None
    huge_page_size_bytes: int | None = None
    hugetlb_bytes: int | None = None
    huge_pages_total: int | None = None
    huge_pages_free: int | None = None
    huge_pages_reserved: int | None = None
    huge_pages_surplus: int | None = None
    swap_total_bytes: int | None = None
    swap_free_bytes: int | None = None
    slab_bytes: int | None = None
    slab_unreclaimable_bytes: int | None = None
    kernel_stack_bytes: int | None = None
    page_tables_bytes: int | None = None
    sec_page_tables_bytes: int | None = None
    vmalloc_used_bytes: int | None = None
    percpu_bytes: int | None = None
    pressure: Pressure | None = Field(default=None, description="/proc/pressure/memory.")
    pressure_unavailable: str | None = Field(
        default=None, description="Why PSI could not be read (old kernel, psi=0)."
    )
    swap_devices: int | None = Field(default=None, description="Lines in /proc/swaps.")
    evidence: dict[str, EvidenceRef] = Field(
        default_factory=dict, description="meminfo key or 'pressure' -> where it was read."
    )

    @property
    def used_bytes(self) -> int | None:
        """MemTotal minus MemAvailable: what would not come back without killing something."""
        if self.total_bytes is None or self.available_bytes is None:
            return None
        return self.total_bytes - self.available_bytes


def sections(options: CollectOptions) -> list[SectionSpec]:
    return [
        SectionSpec(name=SECTION, shell=SHELL, timeout_s=5, max_bytes=128 * 1024, in_shell=True)
    ]


def parse(captures: Captures, options: CollectOptions) -> MemoryFacts:
    """Read the ``memory`` section.

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "==> /proc/meminfo <==\\nMemTotal:       1584842752 kB\\n"
    ...     "MemAvailable:     41943040 kB\\nMlocked:         419430400 kB\\n"
    ...     "HugePages_Total:       4\\n\\n"
    ...     "==> /proc/pressure/memory <==\\n"
    ...     "some avg10=31.50 avg60=12.02 avg300=3.10 total=98811234\\n"
    ...     "full avg10=8.25 avg60=2.00 avg300=0.51 total=21000000\\n"
    ... )
    >>> facts = parse({"memory": Captured.complete("memory", text)}, CollectOptions())
    >>> facts.total_bytes, facts.available_bytes, facts.huge_pages_total
    (1622878978048, 42949672960, 4)
    >>> facts.pressure.full.avg10, facts.evidence["Mlocked"].first_line
    (8.25, 4)
    >>> facts.pressure_unavailable, facts.swap_devices
    (None, None)
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return MemoryFacts(unavailable=reason)
    files = dumped_files(captured.text, FILES)
    facts = MemoryFacts()
    meminfo = files.get(MEMINFO)
    if meminfo is None:
        facts.unavailable = f"{MEMINFO} was not readable"
    else:
        _read_meminfo(facts, meminfo)
    pressure = files.get(PRESSURE)
    if pressure is None:
        facts.pressure_unavailable = f"{PRESSURE} is missing (kernel before 4.20, or psi=0)"
    else:
        facts.pressure = parse_pressure(pressure.content)
        if facts.pressure is None:
            facts.pressure_unavailable = f"{PRESSURE} did not read as PSI"
        else:
            lines = pressure.content.splitlines()
            facts.evidence["pressure"] = cite(
                SECTION,
                pressure.first_line,
                "\n".join(lines[:2]),
                last_line=pressure.line_of(max(len(lines), 1) - 1),
            )
    swaps = files.get(SWAPS)
    if swaps is not None:
        facts.swap_devices = max(len(swaps.content.splitlines()) - 1, 0)
    return facts


def _read_meminfo(facts: MemoryFacts, meminfo: DumpedFile) -> None:
    for index, line in enumerate(meminfo.content.splitlines()):
        key, sep, rest = line.partition(":")
        words = rest.split()
        if not sep or not words or not (words[0].isascii() and words[0].isdigit()):
            continue
        value = int(words[0])
        if key in _SIZES:
            unit = words[1] if len(words) > 1 else ""
            setattr(facts, _SIZES[key], value * 1024 if unit == "kB" else value)
        elif key in _COUNTS:
            setattr(facts, _COUNTS[key], value)
        else:
            continue
        number = meminfo.line_of(index)
        facts.evidence[key] = cite(SECTION, number, line)


PROBE = Probe(
    name="memory",
    run_order=30,
    report_order=30,
    sections=sections,
    facts_model=MemoryFacts,
    parse=parse,
    rules_module="forensics.probes.memory_rules",
)
