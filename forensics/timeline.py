"""One chronological list, in UTC, of everything the facts can date.

Each contributor is a pure function ``(Facts) -> list[TimelineEvent]`` listed in
``CONTRIBUTORS``; a probe that learns a time (a kernel event, a process start) adds one
function and one line there, and its events appear in every report. The collection itself
is added by ``build_timeline``, since it is not a fact of the host.

Times from the host are the host's clock (mtimes, ``btime``, ``date``); kernel log stamps
are seconds since boot, turned into wall-clock time with ``kernel_time_to_utc`` and marked
approximate: ``btime`` has whole seconds, and the kernel's clock stops during suspend.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from forensics.durations import describe_duration
from forensics.facts import Facts

BOOT = "boot"
COLLECTION = "collection"
PROCESS_START = "process_start"
LOG_LAST_WRITE = "log_last_write"
GPU_FAILURE = "gpu_failure"
# Kinds that end a process; a log that stops just before one of these ended early.
OOM_KILL = "oom_kill"
SEGFAULT = "segfault"
XID = "xid"
PROCESS_EXIT = "process_exit"
ENDINGS = frozenset({OOM_KILL, SEGFAULT, XID, PROCESS_EXIT})

# Larger than this, the difference between the host's clock and ours is worth saying.
CLOCK_SKEW_WORTH_SAYING_S = 5


class TimelineEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    time: datetime = Field(description="UTC.")
    approximate: bool = Field(
        default=False, description="Derived (e.g. kernel seconds since boot), not read."
    )
    source: str = Field(description="The section the time comes from.")
    line: int | None = Field(default=None, description="1-based line in that section.")
    kind: str = Field(description="boot, collection, process_start, log_last_write, ...")
    text: str


Contributor = Callable[[Facts], list[TimelineEvent]]


def kernel_time_to_utc(
    monotonic_s: float, boot_time: datetime, uptime_s: float | None = None
) -> datetime | None:
    """Wall-clock time of a kernel log stamp (``[ 9836.058240]``: seconds since boot).

    None when the stamp cannot belong to this boot: negative, not a number, or later than
    the uptime (a line that ``kern.log`` kept from an earlier boot). The stamp needs no
    help from the ring buffer, so an event older than a wrapped buffer's first line, read
    from ``kern.log``, converts the same way.

    >>> from datetime import UTC
    >>> boot = datetime(2025, 11, 29, 18, 40, tzinfo=UTC)
    >>> kernel_time_to_utc(9836.05824, boot).isoformat()
    '2025-11-29T21:23:56.058240+00:00'
    >>> kernel_time_to_utc(180042.11848, boot, uptime_s=8400.0) is None
    True
    """
    if not math.isfinite(monotonic_s) or monotonic_s < 0:
        return None
    if uptime_s is not None and monotonic_s > uptime_s + 1:
        return None
    try:
        return boot_time + timedelta(seconds=monotonic_s)
    except OverflowError:
        return None


def boot_events(facts: Facts) -> list[TimelineEvent]:
    system = facts.system
    if system is None or system.boot_time is None:
        return []
    return [
        TimelineEvent(
            time=system.boot_time, source="system", kind=BOOT, text="host booted (/proc/stat btime)"
        )
    ]


def focus_process_events(facts: Facts) -> list[TimelineEvent]:
    logs = facts.logs
    if logs is None:
        return []
    return [
        TimelineEvent(
            time=process.started,
            approximate=True,
            source="logs",
            line=process.raw_line,
            kind=PROCESS_START,
            text=f"focus process {process.name} (pid {process.pid}) started; "
            f"state at collection: {process.state}",
        )
        for process in logs.focus_processes
        if process.started is not None
    ]


def log_events(facts: Facts) -> list[TimelineEvent]:
    logs = facts.logs
    if logs is None:
        return []
    return [
        TimelineEvent(
            time=log.modified,
            source="logs",
            line=log.stat_line,
            kind=LOG_LAST_WRITE,
            text=f"last write to {log.path} ({log.size_bytes} bytes)",
        )
        for log in logs.files
        if log.modified is not None
    ]


def gpu_events(facts: Facts) -> list[TimelineEvent]:
    gpu = facts.gpu
    if gpu is None or gpu.failure is None or gpu.host_clock is None:
        return []
    return [
        TimelineEvent(
            time=gpu.host_clock,
            source="gpu",
            line=gpu.failure_run.first_line if gpu.failure_run else None,
            kind=GPU_FAILURE,
            text=f"nvidia-smi failed ({gpu.failure}): {gpu.failure_message}",
        )
    ]


CONTRIBUTORS: tuple[Contributor, ...] = (
    boot_events,
    focus_process_events,
    log_events,
    gpu_events,
)


def host_events(facts: Facts) -> list[TimelineEvent]:
    """Every contributor's events, in time order."""
    events = [event for contributor in CONTRIBUTORS for event in contributor(facts)]
    return sorted(events, key=lambda event: event.time)


def build_timeline(facts: Facts, collection_started: datetime) -> list[TimelineEvent]:
    """The host's events and the collection itself, in time order (stable for equal times)."""
    text = "collection started (this machine's clock)"
    host_clock = facts.system.host_clock if facts.system else None
    if host_clock is not None:
        skew = (host_clock - collection_started).total_seconds()
        if abs(skew) > CLOCK_SKEW_WORTH_SAYING_S:
            direction = "ahead of" if skew > 0 else "behind"
            text += f"; the host's clock is {describe_duration(abs(skew))} {direction} ours"
    collection = TimelineEvent(
        time=collection_started, source="manifest", kind=COLLECTION, text=text
    )
    return sorted([*host_events(facts), collection], key=lambda event: event.time)
