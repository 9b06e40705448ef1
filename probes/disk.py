"""disk: is a filesystem that matters full (blocks or inodes)? A full disk explains
missing and truncated logs.

Checks ``/``, ``/tmp``, ``/var/log``, the directories of the watched logs (``--log``,
``--expect-log``; the nearest directory that exists) and the working directory of the
focus process, each with ``df -P`` and ``df -P -i`` (``disk.sh``). A path already checked
is not checked again. Some busybox builds have no ``df -i``: after the first refusal the
inode check is skipped, and the facts say so::

    @ path root /
    @ resolved /
    @ df
    Filesystem     1024-blocks     Used Available Capacity Mounted on
    /dev/vda         264212084 23423924  82966988      23% /
    @ rc 0
    @ dfi
    Filesystem       Inodes  IUsed    IFree IUse% Mounted on
    /dev/vda       16777216 414213 16363003    3% /
    @ rc 0
    @ path cwd:4242 /work/cuzk
    @ resolved /work/cuzk
    @ seen
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from forensics.core.evidence import cite
from forensics.core.models import CollectOptions, Finding, SectionSpec, Severity
from forensics.core.probe import (
    Captures,
    Probe,
    ProbeFacts,
    RuleContext,
    open_section,
)
from forensics.remote.host_script import probe_shell, shell_quote

SECTION = "disk"
FULL_PERCENT = 95
MAX_FOCUS_PROCESSES = 8
FIXED_PATHS = (("root", "/"), ("tmp", "/tmp"), ("var_log", "/var/log"))
_GLOB_CHARS = re.compile(r"[*?\[]")
_DF_LINE = re.compile(r"^(?P<device>.*?)\s+(?P<total>\d+)\s+(?P<used>\d+)\s+(?P<free>\d+)\s+"
                      r"(?P<percent>\d+%|-)\s+(?P<mount>/.*)$")  # fmt: skip


class Filesystem(BaseModel):
    device: str
    mount_point: str
    size_kib: int
    used_kib: int
    available_kib: int
    used_percent: int | None = Field(description="df's Capacity: used / (used + available).")
    inodes_total: int | None = None
    inodes_used: int | None = None
    inodes_free: int | None = None
    inodes_used_percent: int | None = Field(default=None, description="None: no inode limit.")
    blocks_line: int = Field(description="Raw line of the df -P row.")
    inodes_line: int | None = None


class WatchedPath(BaseModel):
    why: str = Field(description="root, tmp, var_log, log:<glob or path>, cwd:<pid>.")
    path: str = Field(description="As asked.")
    resolved: str | None = Field(default=None, description="The nearest existing directory.")
    mount_point: str | None = None
    error: str | None = Field(default=None, description="What df said when it failed.")
    raw_line: int


class DiskFacts(ProbeFacts):
    paths: list[WatchedPath] = Field(default_factory=list)
    filesystems: list[Filesystem] = Field(default_factory=list)
    inodes_unavailable: str | None = Field(
        default=None, description="Why inode use is unknown (e.g. busybox df without -i)."
    )


def watched_directories(options: CollectOptions) -> list[tuple[str, str]]:
    """Where the watched logs live: the part of each glob before its first wildcard.

    >>> watched_directories(CollectOptions(logs=("/var/log/cuzk*/run.log", "~/b.log"),
    ...     expected_logs=("/srv/sup.log",)))
    [('log', '/var/log'), ('log', '~'), ('log', '/srv')]
    """
    directories = []
    for path in (*options.logs, *options.expected_logs):
        fixed = _GLOB_CHARS.split(path, maxsplit=1)[0]
        directory = fixed.rsplit("/", 1)[0] if "/" in fixed else fixed
        directories.append(("log", directory or "/"))
    return directories


def sections(options: CollectOptions) -> list[SectionSpec]:
    wanted = [*FIXED_PATHS, *watched_directories(options)]
    shell = probe_shell(
        __name__,
        {
            "paths": [f"{why} {path}" for why, path in wanted],
            "focus_most": MAX_FOCUS_PROCESSES if options.focus else None,
        },
    )
    return [SectionSpec(name=SECTION, shell=shell, timeout_s=20, max_bytes=256 * 1024)]


def parse(captures: Captures, options: CollectOptions) -> DiskFacts:
    """Read the ``disk`` section.

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "@ path root /\\n@ resolved /\\n@ df\\n"
    ...     "Filesystem     1024-blocks     Used Available Capacity Mounted on\\n"
    ...     "/dev/vda         264212084 23423924  82966988      23% /\\n@ rc 0\\n@ dfi\\n"
    ...     "df: invalid option -- 'i'\\n@ rc 1\\n@ path tmp /tmp\\n@ resolved /\\n@ seen\\n"
    ... )
    >>> facts = parse({"disk": Captured.complete("disk", text)}, CollectOptions())
    >>> fs = facts.filesystems[0]
    >>> fs.mount_point, fs.used_percent, fs.inodes_used_percent, facts.inodes_unavailable
    ('/', 23, None, "df -i failed: df: invalid option -- 'i'")
    >>> [(p.why, p.path, p.mount_point) for p in facts.paths]
    [('root', '/', '/'), ('tmp', '/tmp', '/')]
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return DiskFacts(unavailable=reason)
    facts = DiskFacts(unavailable=reason)
    by_mount: dict[str, Filesystem] = {}
    mount_of: dict[str, str] = {}
    current: WatchedPath | None = None
    mode: str | None = None
    said: list[str] = []
    for number, line in enumerate(captured.text.split("\n"), start=1):
        if line.startswith("@ path "):
            why, _, path = line[7:].partition(" ")
            current = WatchedPath(why=why, path=path, raw_line=number)
            facts.paths.append(current)
            mode = None
        elif current is None:
            continue
        elif line.startswith("@ resolved "):
            current.resolved = line[11:]
            current.mount_point = mount_of.get(current.resolved)
        elif line in ("@ df", "@ dfi"):
            mode, said = line[2:], []
        elif line.startswith("@ rc "):
            failed = line[5:].strip() != "0"
            if failed and mode == "df":
                current.error = " ".join(said)[:300] or f"df exit status {line[5:]}"
            elif failed and mode == "dfi" and facts.inodes_unavailable is None:
                facts.inodes_unavailable = "df -i failed: " + (" ".join(said)[:300] or line)
            mode = None
        elif mode is not None:
            row = _DF_LINE.match(line.strip())
            if row is None:
                if line.strip() and not line.startswith("Filesystem"):
                    said.append(line.strip())
                continue
            _read_row(facts, by_mount, current, mode, row, number)
            if current.resolved is not None and current.mount_point is not None:
                mount_of[current.resolved] = current.mount_point
    return facts


def _read_row(
    facts: DiskFacts,
    by_mount: dict[str, Filesystem],
    current: WatchedPath,
    mode: str,
    row: re.Match[str],
    number: int,
) -> None:
    mount = row["mount"]
    percent = int(row["percent"][:-1]) if row["percent"] != "-" else None
    if mode == "df":
        current.mount_point = mount
        if mount not in by_mount:
            by_mount[mount] = Filesystem(
                device=row["device"],
                mount_point=mount,
                size_kib=int(row["total"]),
                used_kib=int(row["used"]),
                available_kib=int(row["free"]),
                used_percent=percent,
                blocks_line=number,
            )
            facts.filesystems.append(by_mount[mount])
        return
    filesystem = by_mount.get(mount)
    if filesystem is None or filesystem.inodes_line is not None:
        return
    filesystem.inodes_total = int(row["total"])
    filesystem.inodes_used = int(row["used"])
    filesystem.inodes_free = int(row["free"])
    # Filesystems without an inode limit (btrfs, vfat) show 0 inodes and '-'.
    filesystem.inodes_used_percent = percent if filesystem.inodes_total else None
    filesystem.inodes_line = number


def rules(facts: DiskFacts, context: RuleContext) -> list[Finding]:
    findings = []
    for filesystem in facts.filesystems:
        full = []
        if filesystem.used_percent is not None and filesystem.used_percent >= FULL_PERCENT:
            full.append(f"{filesystem.used_percent}% of its space")
        inodes = filesystem.inodes_used_percent
        if inodes is not None and inodes >= FULL_PERCENT:
            full.append(f"{inodes}% of its inodes")
        if full:
            findings.append(_full(facts, filesystem, full))
    return findings


def _full(facts: DiskFacts, filesystem: Filesystem, full: list[str]) -> Finding:
    mount = filesystem.mount_point
    watched = [p for p in facts.paths if p.mount_point == mount]
    holds = ", ".join(f"{p.path} ({p.why})" for p in watched) or mount
    evidence = [
        cite(
            SECTION,
            filesystem.blocks_line,
            f"{filesystem.device} {mount}: {filesystem.used_percent}% used, "
            f"{filesystem.available_kib} KiB available",
        )
    ]
    if filesystem.inodes_line is not None:
        evidence.append(
            cite(
                SECTION,
                filesystem.inodes_line,
                f"{mount}: {filesystem.inodes_used_percent}% of "
                f"{filesystem.inodes_total} inodes used",
            )
        )
    quoted = shell_quote(mount)
    return Finding(
        id="disk.full",
        severity=Severity.critical,
        title=f"Filesystem {mount} is full: {' and '.join(full)} used",
        explanation=(
            f"The filesystem mounted at {mount} ({filesystem.device}) has used "
            f"{' and '.join(full)}. It holds {holds}. Writes there fail with 'No space left on "
            "device', which many programs and wrappers swallow: logs stop or are never created, "
            "and temp files fail. Sure: these are df's own numbers."
        ),
        next_steps=[
            f"df -h {quoted}; df -i {quoted}",
            f"du -xh --max-depth=2 {quoted} 2>/dev/null | sort -h | tail -20",
            f"find {quoted} -xdev -type f -size +1G 2>/dev/null (big files); deleted-but-open "
            "files: ls -l /proc/*/fd 2>/dev/null | grep deleted",
        ],
        subject={
            "mount_point": mount,
            "used_percent": filesystem.used_percent,
            "inodes_used_percent": filesystem.inodes_used_percent,
        },
        evidence=evidence,
    )


PROBE = Probe(
    name="disk",
    run_order=40,
    report_order=70,
    sections=sections,
    facts_model=DiskFacts,
    parse=parse,
    rules=rules,
)
