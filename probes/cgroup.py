"""cgroup: which memory cgroups this host or container lives in, what they allow and use,
and what they counted.

Runs on the host ``cgroup.sh`` (one section, in the script's shell; builtins find the
cgroups and walk their ancestors, one ``head`` reads every file; ``--focus`` adds the focus
processes, found by ``_fx_focus``)::

    mount / /sys/fs/cgroup tmpfs tmpfs rw,mode=755
    mount / /sys/fs/cgroup/memory cgroup cgroup rw,memory
    pid1 v1 /
    self v1 /job
    focus_name 4242 cuzk
    focus 4242 v1 /job
    vmstat_oom_kill 3
    want 1 root /
    want 1 self /job
    want 1 focus /job
    dir 1 /
    dir 1 /job
    ==> /sys/fs/cgroup/memory/memory.oom_control <==
    oom_kill_disable 0
    ...
    ==> /sys/fs/cgroup/memory/job/memory.limit_in_bytes <==
    367219703808
    ==> /sys/fs/cgroup/memory/job/memory.usage_in_bytes <==
    366145961984
    ...

``want`` lines name the cgroups looked at and why (paths relative to the mount, after
removing the mount's own root, as Docker on v1 mounts the container's cgroup at the mount
point); ``dir`` lines list every directory dumped, in dump order: the wanted cgroups and
every visible ancestor, since the limit that bites may sit on an ancestor. This returns
``CgroupFacts(layout='v1', cgroups=[CgroupCounters(cgroup='/', roles=['root'], ...),
CgroupCounters(cgroup='/job', roles=['self', 'focus'], limit_bytes=367219703808,
effective_limit_cgroup='/job', working_set_bytes=..., ...)], ...)``.

The v1 ``oom_kill`` counter is per cgroup and does not climb the hierarchy; v2
``memory.events`` is hierarchical and ``memory.events.local`` is not. ``/proc/vmstat``
``oom_kill`` counts every OOM kill on the kernel, container or not.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from forensics.core.cgroup_paths import UNLIMITED_AT, V1_ROOT, V2_ROOT
from forensics.core.evidence import cite
from forensics.core.focus import FocusProcess
from forensics.core.models import CollectOptions, EvidenceRef, SectionSpec
from forensics.core.numbers import parse_flag, parse_int
from forensics.core.pressure import Pressure, parse_pressure
from forensics.core.probe import Captures, Probe, ProbeFacts, open_section
from forensics.remote.file_dump import DumpedFile, dumped_files
from forensics.remote.host_script import probe_shell

SECTION = "cgroup"
UNIFIED_CONTROLLERS = "/sys/fs/cgroup/unified/cgroup.controllers"
V1_FILES = (
    "memory.oom_control",
    "memory.failcnt",
    "memory.limit_in_bytes",
    "memory.usage_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.stat",
    "memory.kmem.usage_in_bytes",
)
V2_FILES = (
    "cgroup.controllers",
    "memory.events",
    "memory.events.local",
    "memory.max",
    "memory.current",
    "memory.high",
    "memory.peak",
    "memory.stat",
    "memory.pressure",
    "memory.swap.current",
    "memory.swap.max",
)
# A directory is dumped only when this file is there: every v1 memory cgroup has it, and
# every v2 cgroup has cgroup.controllers; this spares head an error line per missing file.
V1_MARKER = "memory.usage_in_bytes"
V2_MARKER = "cgroup.controllers"
# v1 "unlimited" is PAGE_COUNTER_MAX pages rounded to the page size (9223372036854771712 with
# 4 KiB pages); anything this large is no limit at all.
FOCUS_PIDS_MAX = 8
ROLES = ("root", "pid1", "self", "focus")
# v2 memory.stat keys that are kernel memory; `kernel` (5.18+) already holds all but sock.
KERNEL_PARTS = (
    "kernel_stack",
    "pagetables",
    "sec_pagetables",
    "percpu",
    "vmalloc",
    "slab_unreclaimable",
    "slab_reclaimable",
    "sock",
)
_INSIDE_KERNEL_KEY = ("kernel_stack", "pagetables", "percpu", "vmalloc", "slab_unreclaimable",
                      "slab_reclaimable")  # fmt: skip


def shell(options: CollectOptions) -> str:
    """The section's shell text (``cgroup.sh``); ``--focus`` adds the focus processes."""
    return probe_shell(
        __name__,
        {
            "v1_root": V1_ROOT,
            "v2_root": V2_ROOT,
            "v1_files": " ".join(V1_FILES),
            "v2_files": " ".join(V2_FILES),
            "v1_marker": V1_MARKER,
            "v2_marker": V2_MARKER,
            "unified_controllers": UNIFIED_CONTROLLERS,
            "focus_most": FOCUS_PIDS_MAX if options.focus else None,
        },
    )


class CgroupMount(BaseModel):
    """One line of /proc/self/mountinfo at or under /sys/fs/cgroup."""

    root: str = Field(description="Which cgroup of the hierarchy appears at the mount point.")
    mount_point: str
    fstype: str
    source: str = ""
    options: str = Field(default="", description="Super options, e.g. rw,memory.")


class CgroupCounters(BaseModel):
    """One memory cgroup: OOM counters, limit, usage and what the usage is made of."""

    path: str = Field(description="Directory on the host, e.g. /sys/fs/cgroup/memory/docker/ab.")
    cgroup: str = Field(description="Path in the hierarchy; '/' is the root of what we see.")
    version: Literal[1, 2]
    roles: list[str] = Field(
        description="root, pid1, self and/or focus: why we looked at it; 'ancestor' when it "
        "was read only because it is a parent of one of those."
    )
    oom: int | None = Field(default=None, description="v2 memory.events oom.")
    oom_kill: int | None = Field(default=None, description="v2 memory.events / v1 oom_control.")
    oom_kill_local: int | None = Field(default=None, description="v2 memory.events.local.")
    oom_group_kill: int | None = None
    max_events: int | None = Field(default=None, description="v2 memory.events max.")
    high_events: int | None = Field(default=None, description="v2 memory.events high.")
    under_oom: bool | None = Field(default=None, description="v1 oom_control under_oom.")
    failcnt: int | None = Field(default=None, description="v1 memory.failcnt.")
    limit_bytes: int | None = Field(default=None, description="None when unlimited or unseen.")
    unlimited: bool | None = None
    usage_bytes: int | None = None
    oom_kill_evidence: EvidenceRef | None = None
    high_bytes: int | None = Field(default=None, description="v2 memory.high; None for max.")
    peak_bytes: int | None = Field(
        default=None, description="v2 memory.peak, v1 memory.max_usage_in_bytes."
    )
    swap_bytes: int | None = Field(default=None, description="v2 memory.swap.current.")
    swap_limit_bytes: int | None = Field(default=None, description="v2 memory.swap.max.")
    stat: dict[str, int] = Field(default_factory=dict, description="memory.stat as read.")
    inactive_file_bytes: int | None = Field(
        default=None, description="v2 inactive_file, v1 total_inactive_file: reclaimable cache."
    )
    working_set_bytes: int | None = Field(
        default=None,
        description="Usage minus inactive file cache (what docker stats shows); what the "
        "limit really has to hold.",
    )
    kernel_bytes: int | None = Field(
        default=None,
        description="v2 memory.stat kernel + sock (or the sum of its parts on old kernels); "
        "v1 memory.kmem.usage_in_bytes.",
    )
    kernel_parts: dict[str, int] = Field(
        default_factory=dict, description="v2 only; other_kernel = kernel minus named parts."
    )
    hierarchical_limit_bytes: int | None = Field(
        default=None,
        description="v1 memory.stat hierarchical_memory_limit: the smallest limit on the "
        "path, ancestors we cannot see included. None when unlimited.",
    )
    pressure: Pressure | None = Field(default=None, description="v2 memory.pressure.")
    effective_limit_bytes: int | None = Field(
        default=None, description="The smallest limit on the path to the root of what we see."
    )
    effective_limit_cgroup: str | None = Field(
        default=None,
        description="Which cgroup sets the effective limit; None when it is set above what "
        "we can see (v1 hierarchical_memory_limit) or there is none.",
    )
    missing_files: list[str] = Field(
        default_factory=list, description="Expected files not visible in this directory."
    )
    evidence: dict[str, EvidenceRef] = Field(
        default_factory=dict, description="Where usage, limit, kernel, pressure... were read."
    )

    @property
    def effective_limit_above_view(self) -> bool:
        return self.effective_limit_bytes is not None and self.effective_limit_cgroup is None


class CgroupFacts(ProbeFacts):
    layout: Literal["v1", "v2", "hybrid", "none"] | None = Field(
        default=None,
        description="From the files present: v1 memory files, a v2 root (cgroup.controllers) "
        "or both (hybrid: v1 controllers beside a cgroup2 mount).",
    )
    memory_controller: Literal["v1", "v2"] | None = Field(
        default=None, description="Which hierarchy accounts memory."
    )
    layout_evidence: list[str] = Field(default_factory=list)
    mount_layout: Literal["v1", "v2", "hybrid", "none"] | None = Field(
        default=None, description="What /proc/self/mountinfo claims; the files win."
    )
    layout_disagreements: list[str] = Field(
        default_factory=list,
        description="Where the mount table or /proc/self/cgroup disagree with the files "
        "(sandboxes, LXCFS, bind-mounted views).",
    )
    mounts: list[CgroupMount] = Field(default_factory=list)
    v2_controllers: list[str] | None = Field(
        default=None, description="cgroup.controllers of the v2 root we see."
    )
    pid1_cgroup_v1: str | None = None
    pid1_cgroup_v2: str | None = None
    self_cgroup_v1: str | None = None
    self_cgroup_v2: str | None = None
    focus_pattern: str | None = None
    focus_processes: list[FocusProcess] = Field(default_factory=list)
    focus_more: bool = Field(
        default=False, description=f"More than {FOCUS_PIDS_MAX} processes matched; rest unread."
    )
    focus_error: str | None = Field(default=None, description="grep's complaint, if any.")
    cgroups: list[CgroupCounters] = Field(default_factory=list)
    not_visible: list[str] = Field(
        default_factory=list,
        description="Cgroups named in /proc/PID/cgroup whose files are not visible here.",
    )
    vmstat_oom_kill: int | None = Field(
        default=None, description="Kernel-wide OOM kills since boot (/proc/vmstat)."
    )
    vmstat_evidence: EvidenceRef | None = None

    def counted_oom_kills(self) -> int | None:
        """OOM kills counted by the cgroups we looked at (their largest counter), or None.

        Ancestors read only to find limits are left out: a v2 ancestor's hierarchical
        counter also counts its other children's kills.
        """
        counts = [c.oom_kill for c in self.cgroups if c.oom_kill is not None and _looked_at(c)]
        return max(counts) if counts else None

    def path_to_root(self, counters: CgroupCounters) -> list[CgroupCounters]:
        """``counters`` and its visible ancestors, nearest first."""
        by_cgroup = {c.cgroup: c for c in self.cgroups if c.version == counters.version}
        chain = [counters]
        # By components, so that any name the host reports ("job", "a//b") ends the walk.
        parts = [part for part in counters.cgroup.split("/") if part]
        for depth in range(len(parts) - 1, -1, -1):
            ancestor = "/" + "/".join(parts[:depth])
            if ancestor in by_cgroup and by_cgroup[ancestor] is not counters:
                chain.append(by_cgroup[ancestor])
        return chain

    def focus_in(self, counters: CgroupCounters) -> list[FocusProcess]:
        """The focus processes whose memory cgroup is ``counters``."""
        mount_point = V1_ROOT if counters.version == 1 else V2_ROOT
        roots = [m.root for m in self.mounts if m.mount_point == mount_point]
        root = roots[-1] if roots else "/"
        found = []
        for process in self.focus_processes:
            path = process.cgroup_v1 if counters.version == 1 else process.cgroup_v2
            if path is not None and relative_to_mount(root, path) == counters.cgroup:
                found.append(process)
        return found

    def looked_at(self) -> list[CgroupCounters]:
        """The cgroups of the root, PID 1, this session and the focus processes."""
        return [c for c in self.cgroups if _looked_at(c)]


def relative_to_mount(root: str, path: str) -> str:
    """A /proc/PID/cgroup path as seen under a mount of the hierarchy at ``root``.

    Docker on v1 mounts the container's own cgroup (``/docker/ab``) at the mount point.

    >>> relative_to_mount("/docker/ab", "/docker/ab/job"), relative_to_mount("/", "/job")
    ('/job', '/job')
    >>> relative_to_mount("/docker/ab", "/docker/ab")
    '/'
    """
    if root == "/" or root == "":
        return path
    if path == root:
        return "/"
    return path[len(root) :] if path.startswith(root + "/") else path


def _looked_at(counters: CgroupCounters) -> bool:
    return any(role in ROLES for role in counters.roles)


def sections(options: CollectOptions) -> list[SectionSpec]:
    spec = SectionSpec(
        name=SECTION, shell=shell(options), timeout_s=10, max_bytes=512 * 1024, in_shell=True
    )
    return [spec]


def parse(captures: Captures, options: CollectOptions) -> CgroupFacts:
    """Read the ``cgroup`` section.

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "pid1 v1 /\\nself v1 /job\\nvmstat_oom_kill 2\\n"
    ...     "want 1 root /\\nwant 1 pid1 /\\nwant 1 self /job\\ndir 1 /\\ndir 1 /job\\n"
    ...     "==> /sys/fs/cgroup/memory/memory.oom_control <==\\n"
    ...     "oom_kill_disable 0\\nunder_oom 0\\noom_kill 0\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/memory.limit_in_bytes <==\\n9223372036854771712\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/job/memory.oom_control <==\\n"
    ...     "oom_kill_disable 0\\nunder_oom 0\\noom_kill 2\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/job/memory.limit_in_bytes <==\\n1073741824\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/job/memory.usage_in_bytes <==\\n1048576000\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/job/memory.stat <==\\n"
    ...     "total_inactive_file 20971520\\nhierarchical_memory_limit 1073741824\\n"
    ... )
    >>> facts = parse({"cgroup": Captured.complete("cgroup", text)}, CollectOptions())
    >>> facts.layout, facts.vmstat_oom_kill, facts.counted_oom_kills()
    ('v1', 2, 2)
    >>> [(c.cgroup, c.roles, c.oom_kill, c.limit_bytes, c.unlimited) for c in facts.cgroups]
    [('/', ['root', 'pid1'], 0, None, True), ('/job', ['self'], 2, 1073741824, False)]
    >>> job = facts.cgroups[1]
    >>> job.oom_kill_evidence.first_line, job.working_set_bytes, job.effective_limit_cgroup
    (20, 1027604480, '/job')
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return CgroupFacts(unavailable=reason, focus_pattern=options.focus)
    facts = CgroupFacts(focus_pattern=options.focus)
    listing = _Listing()
    for number, line in enumerate(captured.text.split("\n"), start=1):
        if line.startswith("==> "):
            break
        _read_line(facts, listing, number, line)
    wanted = [UNIFIED_CONTROLLERS] + [
        f"{_directory(version, cgroup)}/{name}"
        for version, cgroup in listing.dirs
        for name in _files(version)
    ]
    files = dumped_files(captured.text, wanted)
    for version, cgroup in listing.dirs:
        roles = [role for v, role, c in listing.wants if v == version and c == cgroup]
        counters = _counters(version, cgroup, list(dict.fromkeys(roles)) or ["ancestor"], files)
        if counters is not None:
            facts.cgroups.append(counters)
    for counters in facts.cgroups:
        _effective_limit(facts, counters)
    _decide_layout(facts, files)
    _not_visible(facts, listing)
    return facts


class _Listing:
    """What the preamble said would be dumped, and why."""

    def __init__(self) -> None:
        self.wants: list[tuple[Literal[1, 2], str, str]] = []
        self.dirs: list[tuple[Literal[1, 2], str]] = []


def _read_line(facts: CgroupFacts, listing: _Listing, number: int, line: str) -> None:
    words = line.split(" ", 3)
    key = words[0]
    if len(words) >= 3 and key in ("pid1", "self") and words[1] in ("v1", "v2"):
        setattr(facts, f"{key}_cgroup_{words[1]}", line.split(" ", 2)[2])
    elif key == "vmstat_oom_kill" and len(words) == 2 and parse_int(words[1]) is not None:
        facts.vmstat_oom_kill = parse_int(words[1])
        facts.vmstat_evidence = _ref(number, line)
    elif key == "want" and len(words) == 4 and words[1] in ("1", "2") and words[2] in ROLES:
        listing.wants.append((_version(words[1]), words[2], words[3]))
    elif key == "dir" and len(words) >= 3 and words[1] in ("1", "2"):
        listing.dirs.append((_version(words[1]), line.split(" ", 2)[2]))
    elif key == "mount":
        _read_mount(facts, line)
    elif key.startswith("focus"):
        _read_focus(facts, number, line)


def _version(text: str) -> Literal[1, 2]:
    return 1 if text == "1" else 2


def _read_mount(facts: CgroupFacts, line: str) -> None:
    words = line.split()
    if len(words) >= 4:
        facts.mounts.append(
            CgroupMount(
                root=words[1],
                mount_point=words[2],
                fstype=words[3],
                source=words[4] if len(words) > 4 else "",
                options=words[5] if len(words) > 5 else "",
            )
        )


def _read_focus(facts: CgroupFacts, number: int, line: str) -> None:
    key, _, rest = line.partition(" ")
    if key == "focus_more":
        facts.focus_more = True
    elif key == "focus_error":
        facts.focus_error = rest.strip() or "grep failed"
    elif key == "focus_name":
        pid_text, _, name = rest.partition(" ")
        pid = _pid(pid_text)
        if pid is not None:
            _focus_process(facts, pid, number).name = name or None
    elif key == "focus":
        words = rest.split(" ", 2)
        pid = _pid(words[0])
        if len(words) == 3 and pid is not None and words[1] in ("v1", "v2"):
            setattr(_focus_process(facts, pid, number), f"cgroup_{words[1]}", words[2])


def _pid(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


def _focus_process(facts: CgroupFacts, pid: int, number: int) -> FocusProcess:
    for process in facts.focus_processes:
        if process.pid == pid:
            return process
    process = FocusProcess(pid=pid, raw_line=number)
    facts.focus_processes.append(process)
    return process


def _directory(version: Literal[1, 2], cgroup: str) -> str:
    root = V1_ROOT if version == 1 else V2_ROOT
    return root if cgroup == "/" else f"{root}{cgroup}"


def _files(version: Literal[1, 2]) -> tuple[str, ...]:
    return V1_FILES if version == 1 else V2_FILES


def _counters(
    version: Literal[1, 2],
    cgroup: str,
    roles: list[str],
    files: dict[str, DumpedFile],
) -> CgroupCounters | None:
    directory = _directory(version, cgroup)
    mine = {name: files[f"{directory}/{name}"] for name in _files(version)
            if f"{directory}/{name}" in files}  # fmt: skip
    if not any(name.startswith("memory.") for name in mine):
        return None
    counters = CgroupCounters(path=directory, cgroup=cgroup, version=version, roles=roles)
    counters.missing_files = [name for name in _files(version) if name not in mine]
    if version == 1:
        _read_v1(counters, mine)
    else:
        _read_v2(counters, mine)
    _working_set(counters)
    return counters


def _read_v1(counters: CgroupCounters, files: dict[str, DumpedFile]) -> None:
    control = files.get("memory.oom_control")
    if control:
        keyed = control.keyed()
        counters.under_oom = parse_flag(keyed.get("under_oom"))
        counters.oom_kill, counters.oom_kill_evidence = _counter(control, keyed, "oom_kill")
    counters.failcnt = _number(files.get("memory.failcnt"))
    counters.usage_bytes = _single(counters, files, "memory.usage_in_bytes", "usage")
    counters.peak_bytes = _single(counters, files, "memory.max_usage_in_bytes", "peak")
    counters.kernel_bytes = _single(counters, files, "memory.kmem.usage_in_bytes", "kernel")
    limit = _single(counters, files, "memory.limit_in_bytes", "limit")
    if limit is not None:
        counters.unlimited = limit >= UNLIMITED_AT
        counters.limit_bytes = None if counters.unlimited else limit
    stat = files.get("memory.stat")
    if stat:
        counters.stat = _stat(stat)
        counters.inactive_file_bytes = counters.stat.get("total_inactive_file")
        _cite(counters, stat, "total_inactive_file", "inactive_file")
        hierarchical = counters.stat.get("hierarchical_memory_limit")
        if hierarchical is not None and hierarchical < UNLIMITED_AT:
            counters.hierarchical_limit_bytes = hierarchical
            _cite(counters, stat, "hierarchical_memory_limit", "hierarchical_limit")


def _read_v2(counters: CgroupCounters, files: dict[str, DumpedFile]) -> None:
    events = files.get("memory.events")
    if events:
        keyed = events.keyed()
        counters.oom = parse_int(keyed.get("oom"))
        counters.oom_group_kill = parse_int(keyed.get("oom_group_kill"))
        counters.max_events = parse_int(keyed.get("max"))
        counters.high_events = parse_int(keyed.get("high"))
        counters.oom_kill, counters.oom_kill_evidence = _counter(events, keyed, "oom_kill")
    local = files.get("memory.events.local")
    if local:
        counters.oom_kill_local = parse_int(local.keyed().get("oom_kill"))
    counters.usage_bytes = _single(counters, files, "memory.current", "usage")
    counters.peak_bytes = _single(counters, files, "memory.peak", "peak")
    counters.swap_bytes = _number(files.get("memory.swap.current"))
    counters.swap_limit_bytes = _number(files.get("memory.swap.max"))
    counters.high_bytes = _number(files.get("memory.high"))
    maximum = files.get("memory.max")
    if maximum is not None:
        text = maximum.content.strip()
        counters.unlimited = text == "max"
        counters.limit_bytes = parse_int(text) if not counters.unlimited else None
        counters.evidence["limit"] = _single_ref(maximum, f"{counters.path}/memory.max")
    stat = files.get("memory.stat")
    if stat:
        counters.stat = _stat(stat)
        counters.inactive_file_bytes = counters.stat.get("inactive_file")
        _cite(counters, stat, "inactive_file", "inactive_file")
        _kernel_v2(counters, stat)
    pressure = files.get("memory.pressure")
    if pressure:
        counters.pressure = parse_pressure(pressure.content)
        counters.evidence["pressure"] = _file_ref(pressure, 0, last_index=1)


def _kernel_v2(counters: CgroupCounters, stat: DumpedFile) -> None:
    values = counters.stat
    parts = {key: values[key] for key in KERNEL_PARTS if values.get(key)}
    if "kernel" in values:
        counters.kernel_bytes = values["kernel"] + values.get("sock", 0)
        other = values["kernel"] - sum(values.get(key, 0) for key in _INSIDE_KERNEL_KEY)
        if other > 0:
            parts["other_kernel"] = other
        _cite(counters, stat, "kernel", "kernel")
    elif parts:
        counters.kernel_bytes = sum(parts.values())
    counters.kernel_parts = dict(sorted(parts.items(), key=lambda item: -item[1]))


def _working_set(counters: CgroupCounters) -> None:
    if counters.usage_bytes is None:
        return
    inactive = counters.inactive_file_bytes or 0
    counters.working_set_bytes = max(counters.usage_bytes - inactive, 0)


def _effective_limit(facts: CgroupFacts, counters: CgroupCounters) -> None:
    """The smallest limit on the path; v1's hierarchical_memory_limit also sees ancestors
    outside our view, so a smaller figure there means an invisible ancestor sets it."""
    limits = [(c.limit_bytes, c.cgroup) for c in facts.path_to_root(counters) if c.limit_bytes]
    smallest: tuple[int, str | None] | None = min(limits) if limits else None
    hierarchical = counters.hierarchical_limit_bytes
    if hierarchical is not None and (smallest is None or hierarchical < smallest[0]):
        smallest = (hierarchical, None)
    if smallest is not None:
        counters.effective_limit_bytes, counters.effective_limit_cgroup = smallest


def _decide_layout(facts: CgroupFacts, files: dict[str, DumpedFile]) -> None:
    """Decide from the files that are really there; say where other sources disagree."""
    v1 = any(c.version == 1 for c in facts.cgroups)
    v2 = any(c.version == 2 for c in facts.cgroups)
    v2_root = files.get(f"{V2_ROOT}/cgroup.controllers")
    unified = files.get(UNIFIED_CONTROLLERS)
    evidence = facts.layout_evidence
    if v1:
        evidence.append(f"v1 memory files under {V1_ROOT}")
    if v2:
        evidence.append(f"v2 memory files under {V2_ROOT}")
    if v2_root is not None:
        evidence.append(f"{V2_ROOT}/cgroup.controllers: {v2_root.content.strip() or '(empty)'}")
        facts.v2_controllers = v2_root.content.split()
    if unified is not None:
        evidence.append(f"{UNIFIED_CONTROLLERS}: {unified.content.strip() or '(empty)'}")
    if v1 and (v2 or v2_root is not None or unified is not None):
        facts.layout = "hybrid"
    elif v1:
        facts.layout = "v1"
    elif v2 or v2_root is not None:
        facts.layout = "v2"
    else:
        facts.layout = "none"
    facts.memory_controller = "v1" if v1 else "v2" if v2 else None
    _cross_check(facts)


def _cross_check(facts: CgroupFacts) -> None:
    if facts.mounts:
        facts.mount_layout = _mount_layout(facts.mounts)
        if facts.mount_layout != facts.layout:
            top = [m for m in facts.mounts if m.mount_point == V2_ROOT]
            covered = f"; {V2_ROOT} is a {top[-1].fstype} mount" if top else ""
            facts.layout_disagreements.append(
                f"mount table says {facts.mount_layout}{covered}, but the files show "
                f"{facts.layout}; trusting the files"
            )
    claimed = "v1" if facts.self_cgroup_v1 else "v2" if facts.self_cgroup_v2 else None
    if claimed and facts.memory_controller and claimed != facts.memory_controller:
        facts.layout_disagreements.append(
            f"/proc/self/cgroup puts memory on {claimed}, but the memory files visible are "
            f"{facts.memory_controller}; trusting the files"
        )


def _mount_layout(mounts: list[CgroupMount]) -> Literal["v1", "v2", "hybrid", "none"]:
    on_root = [m for m in mounts if m.mount_point == V2_ROOT]
    v2_root = bool(on_root) and on_root[-1].fstype == "cgroup2"
    v1_memory = any(m.fstype == "cgroup" and "memory" in m.options.split(",") for m in mounts)
    unified = any(m.fstype == "cgroup2" and m.mount_point != V2_ROOT for m in mounts)
    if v1_memory and (unified or v2_root):
        return "hybrid"
    if v1_memory:
        return "v1"
    return "v2" if v2_root else "none"


def _not_visible(facts: CgroupFacts, listing: _Listing) -> None:
    seen = {(c.version, c.cgroup) for c in facts.cgroups}
    versions = {c.version for c in facts.cgroups}
    for version, role, cgroup in listing.wants:
        if role != "root" and version in versions and (version, cgroup) not in seen:
            note = (
                f"{role} cgroup v{version} {cgroup}: no files at {_directory(version, cgroup)} "
                "(not visible from here)"
            )
            if note not in facts.not_visible:
                facts.not_visible.append(note)


def _stat(dumped: DumpedFile) -> dict[str, int]:
    values = {}
    for key, text in dumped.keyed().items():
        value = parse_int(text)
        if value is not None and value >= 0:
            values[key] = value
    return values


def _counter(
    dumped: DumpedFile, keyed: dict[str, str], key: str
) -> tuple[int | None, EvidenceRef | None]:
    value = parse_int(keyed.get(key))
    if value is None:
        return None, None
    index = dumped.key_index(key)
    return value, None if index is None else _file_ref(dumped, index)


def _cite(counters: CgroupCounters, dumped: DumpedFile, key: str, name: str) -> None:
    index = dumped.key_index(key)
    if index is not None:
        counters.evidence[name] = _file_ref(dumped, index)


def _single(
    counters: CgroupCounters, files: dict[str, DumpedFile], name: str, evidence: str
) -> int | None:
    dumped = files.get(name)
    value = _number(dumped)
    if dumped is not None and value is not None:
        counters.evidence[evidence] = _single_ref(dumped, f"{counters.path}/{name}")
    return value


def _file_ref(dumped: DumpedFile, index: int, last_index: int | None = None) -> EvidenceRef:
    lines = dumped.content.splitlines() or [""]
    last = min(last_index if last_index is not None else index, len(lines) - 1)
    index = min(index, last)
    return cite(
        SECTION,
        dumped.line_of(index),
        "\n".join(lines[index : last + 1])[:300],
        last_line=dumped.line_of(last),
    )


def _single_ref(dumped: DumpedFile, path: str) -> EvidenceRef:
    """A one-value file, cited with the ``==> path <==`` line above it: a bare number
    does not say what it is."""
    header = dumped.first_line - 1
    value = (dumped.content.splitlines() or [""])[0]
    return cite(
        SECTION,
        max(header, 1),
        f"==> {path} <==\n{value}" if header >= 1 else value,
        last_line=dumped.first_line,
    )


def _ref(number: int, line: str) -> EvidenceRef:
    return cite(SECTION, number, line)


def _number(dumped: DumpedFile | None) -> int | None:
    return parse_int(dumped.content.strip()) if dumped else None


PROBE = Probe(
    name="cgroup",
    run_order=20,
    report_order=20,
    sections=sections,
    facts_model=CgroupFacts,
    parse=parse,
    rules_module="forensics.probes.cgroup_rules",
)
