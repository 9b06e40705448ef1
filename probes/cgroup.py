"""cgroup: which memory cgroups this host or container lives in, and what they counted.

Runs on the host (one section; builtins to find the cgroups, one ``head`` for all files)::

    pid1 v1 /docker/3f2a
    pid1 v2 /
    self v1 /docker/3f2a
    self v2 /
    vmstat_oom_kill 3
    ==> /sys/fs/cgroup/memory/memory.oom_control <==
    oom_kill_disable 0
    under_oom 0
    oom_kill 1
    ==> /sys/fs/cgroup/memory/memory.failcnt <==
    92

and returns ``CgroupFacts(layout='v1', cgroups=[CgroupCounters(path=
'/sys/fs/cgroup/memory', cgroup='/', version=1, roles=['root'], oom_kill=1, failcnt=92,
...)], vmstat_oom_kill=3)``.

The v1 ``oom_kill`` counter is per cgroup and does not climb the hierarchy; v2
``memory.events`` is hierarchical and ``memory.events.local`` is not. ``/proc/vmstat``
``oom_kill`` counts every OOM kill on the kernel, container or not.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from forensics.file_dump import DumpedFile, dumped_files
from forensics.models import CollectOptions, EvidenceRef, SectionSpec
from forensics.probe import Captures, Probe, unavailable_reason

SECTION = "cgroup"
V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"
V1_FILES = (
    "memory.oom_control",
    "memory.failcnt",
    "memory.limit_in_bytes",
    "memory.usage_in_bytes",
)
V2_FILES = (
    "cgroup.controllers",
    "memory.events",
    "memory.events.local",
    "memory.max",
    "memory.current",
)
# v1 "unlimited" is PAGE_COUNTER_MAX pages rounded to the page size (9223372036854771712 with
# 4 KiB pages); anything this large is no limit at all.
UNLIMITED_AT = 1 << 62

SHELL = f"""\
_cg() {{
  while IFS=: read -r _ c p; do
    case ",$c," in
      *,memory,*) echo "$2 v1 $p"; eval "_${{2}}_v1=\\$p" ;;
      ,,) echo "$2 v2 $p"; eval "_${{2}}_v2=\\$p" ;;
    esac
  done <"$1"
}}
_pid1_v1=; _pid1_v2=; _self_v1=; _self_v2=
_cg /proc/1/cgroup pid1
_cg /proc/self/cgroup self
while read -r k v; do if [ "$k" = oom_kill ]; then echo "vmstat_oom_kill $v"; fi; done </proc/vmstat
_files=; _seen=
_dir() {{
  case "$_seen" in *"|$1|"*) return ;; esac
  _seen="$_seen|$1|"
  for f in $2; do _files="$_files
$1/$f"; done
}}
_dir {V1_ROOT} "{" ".join(V1_FILES)}"
_dir {V2_ROOT} "{" ".join(V2_FILES)}"
for _p in "$_pid1_v1" "$_self_v1"; do
  case $_p in /?*) _dir "{V1_ROOT}$_p" "{" ".join(V1_FILES)}" ;; esac
done
for _p in "$_pid1_v2" "$_self_v2"; do
  case $_p in /?*) _dir "{V2_ROOT}$_p" "{" ".join(V2_FILES)}" ;; esac
done
IFS='
'
set -f
head -v -c 65536 $_files
"""


class CgroupCounters(BaseModel):
    """One memory cgroup's OOM counters and its limit, as visible from where we ran."""

    path: str = Field(description="Directory on the host, e.g. /sys/fs/cgroup/memory/docker/ab.")
    cgroup: str = Field(description="Path in the hierarchy; '/' is the root of what we see.")
    version: Literal[1, 2]
    roles: list[str] = Field(description="root, pid1 and/or self: why we looked at it.")
    oom: int | None = Field(default=None, description="v2 memory.events oom.")
    oom_kill: int | None = Field(default=None, description="v2 memory.events / v1 oom_control.")
    oom_kill_local: int | None = Field(default=None, description="v2 memory.events.local.")
    oom_group_kill: int | None = None
    max_events: int | None = Field(default=None, description="v2 memory.events max.")
    under_oom: bool | None = Field(default=None, description="v1 oom_control under_oom.")
    failcnt: int | None = Field(default=None, description="v1 memory.failcnt.")
    limit_bytes: int | None = Field(default=None, description="None when unlimited or unseen.")
    unlimited: bool | None = None
    usage_bytes: int | None = None
    oom_kill_evidence: EvidenceRef | None = None


class CgroupFacts(BaseModel):
    layout: Literal["v1", "v2", "hybrid", "none"] | None = None
    pid1_cgroup_v1: str | None = None
    pid1_cgroup_v2: str | None = None
    self_cgroup_v1: str | None = None
    self_cgroup_v2: str | None = None
    cgroups: list[CgroupCounters] = Field(default_factory=list)
    vmstat_oom_kill: int | None = Field(
        default=None, description="Kernel-wide OOM kills since boot (/proc/vmstat)."
    )
    vmstat_evidence: EvidenceRef | None = None
    unavailable: str | None = None

    def counted_oom_kills(self) -> int | None:
        """OOM kills counted by the cgroups we could read (their largest counter), or None."""
        counts = [c.oom_kill for c in self.cgroups if c.oom_kill is not None]
        return max(counts) if counts else None


def sections(options: CollectOptions) -> list[SectionSpec]:
    return [SectionSpec(name=SECTION, shell=SHELL, timeout_s=10, max_bytes=512 * 1024)]


def parse(captures: Captures, options: CollectOptions) -> CgroupFacts:
    """Read the ``cgroup`` section.

    >>> from forensics.probe import Captured
    >>> from forensics.models import SectionResult
    >>> text = (
    ...     "pid1 v1 /\\npid1 v2 /\\nself v1 /job\\nvmstat_oom_kill 2\\n"
    ...     "==> /sys/fs/cgroup/memory/memory.oom_control <==\\n"
    ...     "oom_kill_disable 0\\nunder_oom 0\\noom_kill 0\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/memory.limit_in_bytes <==\\n9223372036854771712\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/job/memory.oom_control <==\\n"
    ...     "oom_kill_disable 0\\nunder_oom 0\\noom_kill 2\\n\\n"
    ...     "==> /sys/fs/cgroup/memory/job/memory.limit_in_bytes <==\\n67108864\\n"
    ... )
    >>> result = SectionResult(name="cgroup", command="", exit_status=0, duration_s=0.1,
    ...     bytes=len(text), truncated=False, timed_out=False, finished=True)
    >>> facts = parse({"cgroup": Captured(result=result, text=text)}, CollectOptions())
    >>> facts.layout, facts.vmstat_oom_kill, facts.counted_oom_kills()
    ('v1', 2, 2)
    >>> [(c.cgroup, c.roles, c.oom_kill, c.limit_bytes, c.unlimited) for c in facts.cgroups]
    [('/', ['root', 'pid1'], 0, None, True), ('/job', ['self'], 2, 67108864, False)]
    >>> facts.cgroups[1].oom_kill_evidence.first_line
    16
    """
    reason = unavailable_reason(captures, SECTION)
    captured = captures.get(SECTION)
    if captured is None or (reason and not captured.text):
        return CgroupFacts(unavailable=reason)
    facts = CgroupFacts()
    for number, line in enumerate(captured.text.split("==> ", 1)[0].splitlines(), start=1):
        _read_line(facts, number, line)
    directories = _directories(facts)
    wanted = [f"{d}/{name}" for d, _, version, _ in directories for name in _files(version)]
    files = dumped_files(captured.text, wanted)
    for directory, cgroup, version, roles in directories:
        counters = _counters(directory, cgroup, version, roles, files)
        if counters is not None:
            facts.cgroups.append(counters)
    facts.layout = _layout(files)
    return facts


def _read_line(facts: CgroupFacts, number: int, line: str) -> None:
    words = line.split(" ", 2)
    if len(words) == 3 and words[0] in ("pid1", "self") and words[1] in ("v1", "v2"):
        setattr(facts, f"{words[0]}_cgroup_{words[1]}", words[2])
    elif len(words) == 2 and words[0] == "vmstat_oom_kill" and words[1].isdigit():
        facts.vmstat_oom_kill = int(words[1])
        facts.vmstat_evidence = EvidenceRef(
            section=SECTION, first_line=number, last_line=number, excerpt=line
        )


def _directories(facts: CgroupFacts) -> list[tuple[str, str, Literal[1, 2], list[str]]]:
    """The cgroup directories the host script dumped, each once, with why we looked."""
    seen: dict[str, tuple[str, str, Literal[1, 2], list[str]]] = {}
    # Same order as the host script dumps them: the file reader relies on it.
    candidates: list[tuple[str, str | None, Literal[1, 2], str]] = [
        (V1_ROOT, "/", 1, "root"),
        (V2_ROOT, "/", 2, "root"),
        (V1_ROOT, facts.pid1_cgroup_v1, 1, "pid1"),
        (V1_ROOT, facts.self_cgroup_v1, 1, "self"),
        (V2_ROOT, facts.pid1_cgroup_v2, 2, "pid1"),
        (V2_ROOT, facts.self_cgroup_v2, 2, "self"),
    ]
    for root, cgroup, version, role in candidates:
        if cgroup is None:
            continue
        directory = root if cgroup == "/" else f"{root}{cgroup}"
        if directory in seen:
            roles = seen[directory][3]
            if role not in roles:
                roles.append(role)
        else:
            seen[directory] = (directory, cgroup, version, [role])
    return list(seen.values())


def _files(version: Literal[1, 2]) -> tuple[str, ...]:
    return V1_FILES if version == 1 else V2_FILES


def _counters(
    directory: str,
    cgroup: str,
    version: Literal[1, 2],
    roles: list[str],
    files: dict[str, DumpedFile],
) -> CgroupCounters | None:
    mine = {name: files[f"{directory}/{name}"] for name in _files(version)
            if f"{directory}/{name}" in files}  # fmt: skip
    memory_files = [name for name in mine if name.startswith("memory.")]
    if not memory_files:
        return None
    counters = CgroupCounters(path=directory, cgroup=cgroup, version=version, roles=roles)
    if version == 1:
        _read_v1(counters, mine)
    else:
        _read_v2(counters, mine)
    return counters


def _read_v1(counters: CgroupCounters, files: dict[str, DumpedFile]) -> None:
    control = files.get("memory.oom_control")
    if control:
        keyed = _keyed(control)
        counters.under_oom = _flag(keyed.get("under_oom"))
        counters.oom_kill, counters.oom_kill_evidence = _counter(control, keyed, "oom_kill")
    counters.failcnt = _number(files.get("memory.failcnt"))
    counters.usage_bytes = _number(files.get("memory.usage_in_bytes"))
    limit = _number(files.get("memory.limit_in_bytes"))
    if limit is not None:
        counters.unlimited = limit >= UNLIMITED_AT
        counters.limit_bytes = None if counters.unlimited else limit


def _read_v2(counters: CgroupCounters, files: dict[str, DumpedFile]) -> None:
    events = files.get("memory.events")
    if events:
        keyed = _keyed(events)
        counters.oom = _int(keyed.get("oom"))
        counters.oom_group_kill = _int(keyed.get("oom_group_kill"))
        counters.max_events = _int(keyed.get("max"))
        counters.oom_kill, counters.oom_kill_evidence = _counter(events, keyed, "oom_kill")
    local = files.get("memory.events.local")
    if local:
        counters.oom_kill_local = _int(_keyed(local).get("oom_kill"))
    counters.usage_bytes = _number(files.get("memory.current"))
    maximum = files.get("memory.max")
    if maximum is not None:
        text = maximum.content.strip()
        counters.unlimited = text == "max"
        counters.limit_bytes = _int(text) if not counters.unlimited else None


def _keyed(dumped: DumpedFile) -> dict[str, str]:
    pairs = (line.split(None, 1) for line in dumped.content.splitlines())
    return {pair[0]: pair[1].strip() for pair in pairs if len(pair) == 2}


def _counter(
    dumped: DumpedFile, keyed: dict[str, str], key: str
) -> tuple[int | None, EvidenceRef | None]:
    value = _int(keyed.get(key))
    if value is None:
        return None, None
    for index, line in enumerate(dumped.content.splitlines()):
        if line.split(None, 1)[:1] == [key]:
            number = dumped.line_of(index)
            return value, EvidenceRef(
                section=SECTION, first_line=number, last_line=number, excerpt=line
            )
    return value, None


def _layout(files: dict[str, DumpedFile]) -> Literal["v1", "v2", "hybrid", "none"]:
    """Decide from the files that are really there, not from the mount table."""
    v1 = any(path.startswith(V1_ROOT + "/") for path in files)
    v2 = any(
        not path.startswith(V1_ROOT + "/") and path.rsplit("/", 1)[1].startswith("memory.")
        for path in files
    )
    if v1 and v2:
        return "hybrid"
    return "v1" if v1 else "v2" if v2 else "none"


def _number(dumped: DumpedFile | None) -> int | None:
    return _int(dumped.content.strip()) if dumped else None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def _flag(text: str | None) -> bool | None:
    value = _int(text)
    return None if value is None else value != 0


PROBE = Probe(name="cgroup", sections=sections, facts_model=CgroupFacts, parse=parse)
