"""system: who the host is, how long it has been up, and whether it is a container.

Runs ``system.sh`` on the host (one section, one ``head`` process for all files, builtins
for the rest)::

    tool timeout yes
    tool nvidia-smi no
    marker /.dockerenv
    btime 1764441600
    clock 1764450000
    ==> /proc/sys/kernel/hostname <==
    gpu-a
    ==> /proc/uptime <==
    8400.12 16000.55
    ==> /proc/1/comm <==
    tini
    ...

and returns, for instance, ``SystemFacts(hostname='gpu-a', container='docker',
pid1_name='tini', boot_time=datetime(2025, 11, 29, 18, 40, tzinfo=UTC), ...)``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import Field

from forensics.core.models import CollectOptions, SectionSpec
from forensics.core.numbers import parse_float
from forensics.core.probe import Captures, Probe, ProbeFacts, open_section
from forensics.core.redaction import redact
from forensics.core.timeline_event import BOOT, TimelineEvent
from forensics.remote.file_dump import split_head_output
from forensics.remote.host_script import probe_shell

TOOLS = ("timeout", "dmesg", "journalctl", "nvidia-smi", "ps", "busybox", "shellcheck")
MARKERS = ("/.dockerenv", "/run/.containerenv", "/dev/.lxc-boot-id")
FILES = (
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/osrelease",
    "/etc/os-release",
    "/proc/uptime",
    "/sys/devices/system/cpu/online",
    "/proc/1/comm",
    "/proc/1/cmdline",
    "/proc/1/sched",
    "/proc/1/cgroup",
)

SECTION = "system"
SHELL = probe_shell(
    __name__, {"tools": " ".join(TOOLS), "markers": " ".join(MARKERS), "files": FILES}
)

KNOWN_INITS = frozenset(
    {
        "systemd", "init", "tini", "docker-init", "dumb-init", "catatonit", "s6-svscan",
        "runit", "runsvdir", "supervisord", "openrc-init", "upstart", "busybox",
    }
)  # fmt: skip


class SystemFacts(ProbeFacts):
    hostname: str | None = None
    kernel_release: str | None = None
    os_name: str | None = Field(default=None, description="PRETTY_NAME from /etc/os-release.")
    uptime_s: float | None = None
    boot_time: datetime | None = Field(default=None, description="btime from /proc/stat, UTC.")
    host_clock: datetime | None = Field(default=None, description="The host's clock at collection.")
    cpu_count: int | None = None
    container: str | None = Field(
        default=None, description="docker, podman, lxc, kubernetes, containerd, or None."
    )
    container_evidence: list[str] = Field(default_factory=list)
    pid1_name: str | None = None
    pid1_cmdline: str | None = Field(default=None, description="Redacted.")
    pid1_is_known_init: bool | None = None
    tools: dict[str, bool] = Field(default_factory=dict)


def sections(options: CollectOptions) -> list[SectionSpec]:
    return [SectionSpec(name=SECTION, shell=SHELL, timeout_s=10, max_bytes=256 * 1024)]


def parse(captures: Captures, options: CollectOptions) -> SystemFacts:
    """Read the ``system`` section.

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "tool timeout yes\\ntool nvidia-smi no\\nmarker /.dockerenv\\nbtime 1764441600\\n"
    ...     "==> /proc/uptime <==\\n8400.12 16000.55\\n\\n==> /proc/1/comm <==\\ntini\\n\\n"
    ...     "==> /proc/1/cmdline <==\\n/tini\\x00--\\x00cuzk\\x00--api-key=s3\\x00"
    ... )
    >>> facts = parse({"system": Captured.complete("system", text)}, CollectOptions())
    >>> facts.container, facts.pid1_name, facts.pid1_cmdline, facts.pid1_is_known_init
    ('docker', 'tini', '/tini -- cuzk --api-key=[REDACTED]', True)
    >>> facts.boot_time.isoformat(), facts.tools
    ('2025-11-29T18:40:00+00:00', {'timeout': True, 'nvidia-smi': False})
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return SystemFacts(unavailable=reason)
    facts = SystemFacts()
    for line in captured.text.split("==> ", 1)[0].splitlines():
        _read_line(facts, line)
    files = split_head_output(captured.text, FILES)
    facts.hostname = _first_line(files.get("/proc/sys/kernel/hostname"))
    facts.kernel_release = _first_line(files.get("/proc/sys/kernel/osrelease"))
    facts.os_name = _os_name(files.get("/etc/os-release"))
    uptime = _first_line(files.get("/proc/uptime"))
    if uptime:
        facts.uptime_s = parse_float(uptime.split()[0])
    facts.cpu_count = cpu_count(files.get("/sys/devices/system/cpu/online"))
    facts.pid1_name = _first_line(files.get("/proc/1/comm"))
    cmdline = files.get("/proc/1/cmdline")
    if cmdline:
        facts.pid1_cmdline = redact(cmdline.rstrip("\x00").replace("\x00", " "))
    if facts.pid1_name:
        facts.pid1_is_known_init = facts.pid1_name in KNOWN_INITS
    _container_from_cgroup(facts, files.get("/proc/1/cgroup"))
    _container_from_sched(facts, files.get("/proc/1/sched"))
    return facts


def _read_line(facts: SystemFacts, line: str) -> None:
    key, _, value = line.partition(" ")
    if key == "tool":
        name, _, answer = value.partition(" ")
        facts.tools[name] = answer == "yes"
    elif key == "marker":
        facts.container_evidence.append(f"{value} exists")
        kind = {"/.dockerenv": "docker", "/run/.containerenv": "podman"}.get(value, "lxc")
        facts.container = facts.container or kind
    elif key == "btime" and value.isdigit():
        facts.boot_time = datetime.fromtimestamp(int(value), UTC)
    elif key == "clock" and value.isdigit():
        facts.host_clock = datetime.fromtimestamp(int(value), UTC)


def cpu_count(online: str | None) -> int | None:
    """Count CPUs in a kernel CPU list such as ``0-3,8-11``.

    >>> cpu_count("0-3,8-11\\n"), cpu_count("0\\n"), cpu_count("junk")
    (8, 1, None)
    """
    if not online or not online.strip():
        return None
    total = 0
    for part in online.strip().split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        total += int(high) - int(low) + 1 if high else 1
    return total


def _container_from_cgroup(facts: SystemFacts, cgroup: str | None) -> None:
    if not cgroup:
        return
    for kind, needle in (
        ("kubernetes", "kubepods"),
        ("docker", "/docker"),
        ("containerd", "containerd"),
        ("lxc", "/lxc"),
        ("podman", "libpod"),
    ):
        if needle in cgroup:
            facts.container_evidence.append(f"/proc/1/cgroup mentions {needle}")
            facts.container = facts.container or kind
            return


def _container_from_sched(facts: SystemFacts, sched: str | None) -> None:
    """``/proc/1/sched`` names PID 1 by its host PID: anything but 1 means a PID namespace."""
    first = _first_line(sched)
    if not first or "(" not in first:
        return
    pid_text = first.rsplit("(", 1)[1].split(",", 1)[0].strip()
    if pid_text.isdigit() and pid_text != "1":
        facts.container_evidence.append(f"PID 1 is PID {pid_text} outside its namespace")
        facts.container = facts.container or "container"


def _os_name(os_release: str | None) -> str | None:
    if not os_release:
        return None
    values = {}
    for line in os_release.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"').strip("'")
    return values.get("PRETTY_NAME") or values.get("NAME")


def _first_line(text: str | None) -> str | None:
    if not text:
        return None
    line = text.split("\n", 1)[0].strip()
    return line or None


def timeline(facts: SystemFacts) -> list[TimelineEvent]:
    if facts.boot_time is None:
        return []
    return [
        TimelineEvent(
            time=facts.boot_time, source=SECTION, kind=BOOT, text="host booted (/proc/stat btime)"
        )
    ]


PROBE = Probe(
    name="system",
    run_order=10,
    report_order=90,
    sections=sections,
    facts_model=SystemFacts,
    parse=parse,
    timeline=timeline,
)
