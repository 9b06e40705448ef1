"""Kernel log lines: the time stamp each source puts in front, and the message behind it.

The sources the ``kernel_log`` section reads print, for instance::

    [  759.235889] Memory cgroup out of memory: Killed process 15618 ...   dmesg
    [  759.235889] [  T15618] Memory cgroup out of memory: ...             dmesg, printk caller
    [  759.235889] gpu-a kernel: Memory cgroup out of memory: ...         journalctl
    May 15 23:09:27 gpu-a kernel: [  514.682838] Memory cgroup ...        kern.log (Debian)
    Dec 11 10:48:09 node7 kernel: thrash invoked oom-killer: ...          messages (RHEL)
    2026-04-09T21:13:46.839225+00:00 lab-01 kernel: ...                   rsyslog, RFC 3339
    May 15 23:09:27.050705 gpu-a kernel: ...                              journalctl short-precise
    2026-05-15T23:09:27+0200 gpu-a kernel: ...                            journalctl short-iso
    Fri 2026-05-15 23:09:27 CEST gpu-a kernel: ...                        journalctl short-full
    [Fri May 15 23:09:27 2026] Memory cgroup ...                          dmesg -T
    2026-05-15T23:09:27,050705+02:00 Memory cgroup ...                    dmesg --time-format iso

A line without a stamp continues the record before it (memcg stats before 6.5 were one
multi-line record) and takes that record's time. Monotonic stamps become wall-clock times
through the boot time. A stamp that names its zone (RFC 3339, ISO, ``UTC``) is read in it;
the others (traditional syslog, ``dmesg -T``, a zone abbreviation other than UTC) are in the
host's local time, whose UTC offset the section reads; traditional syslog stamps carry no
year either, which comes from the host's clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone

from forensics.core.evidence import cite
from forensics.core.models import EvidenceRef

EXCERPT_CHARS = 400
"""A kernel line quoted as evidence is cut here: some drivers print very long lines."""

# A syslog line stamped before boot belongs to an earlier boot; a little slack absorbs
# rsyslog stamping at whole seconds.
PREVIOUS_BOOT_SLACK_S = 2.0

_MONOTONIC = re.compile(r"^\[\s*(\d{1,10})\.(\d{1,9})\](?:\s*\[\s*[TC]\d+\])?\s?")
_JOURNAL_HOST = re.compile(r"^\S+ kernel: ")
_SYSLOG = re.compile(
    r"^(?P<month>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) "
    r"(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?:\.(?P<fraction>\d{1,9}))? \S+ kernel: ?"
)
_RFC3339 = re.compile(
    r"^(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)(?P<zone>Z|[+-]\d\d:?\d\d) "
    r"(?:\S+ kernel: ?)?"
)
_SHORT_FULL = re.compile(
    r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?) "
    r"(?P<zone>[A-Za-z][A-Za-z0-9+-]{0,9}) \S+ kernel: ?"
)
_CTIME = re.compile(
    r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<month>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r" +(?P<day>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d) (?P<year>\d{4})\] ?"
)
_UTC_NAMES = ("UTC", "GMT", "Z", "UCT")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class Clock:
    """What turns stamps into UTC: boot time, uptime, and the host's UTC offset."""

    boot_time: datetime | None = None
    uptime_s: float | None = None
    utc_offset: timedelta | None = None

    @property
    def now(self) -> datetime | None:
        return self.wall(self.uptime_s)

    def wall(self, monotonic_s: float | None) -> datetime | None:
        if self.boot_time is None or monotonic_s is None:
            return None
        try:
            return self.boot_time + timedelta(seconds=monotonic_s)
        except (OverflowError, ValueError):
            return None


@dataclass(frozen=True)
class KernelLine:
    """One physical line of the log as the section holds it."""

    number: int
    text: str
    message: str
    monotonic_s: float | None
    time: datetime | None
    stamped: bool
    previous_boot: bool = False

    def evidence(self, section: str) -> EvidenceRef:
        """This line as a finding's evidence (long lines cut at ``EXCERPT_CHARS``)."""
        return cite(section, self.number, self.text[:EXCERPT_CHARS])


def read_lines(
    text: str, first_number: int, clock: Clock, previous_boot: bool = False
) -> list[KernelLine]:
    """Split ``text`` into stamped lines; ``first_number`` is the section line of the first.
    ``previous_boot``: the lines are of an earlier boot (``journalctl -b -1``), whatever
    their stamps say; seconds since boot are that boot's, so only wall-clock stamps count.

    >>> from datetime import datetime, UTC
    >>> clock = Clock(boot_time=datetime(2026, 5, 15, 23, 0, tzinfo=UTC), uptime_s=3600.0,
    ...               utc_offset=timedelta(0))
    >>> lines = read_lines(
    ...     "[  514.682838] Memory cgroup out of memory: Killed process 4410 (node)\\n"
    ...     "                 file 734003200\\n"
    ...     "May 14 08:00:01 gpu-a kernel: [   12.000001] usb 1-1: new device\\n", 7, clock)
    >>> [(l.number, l.monotonic_s, l.stamped, l.previous_boot) for l in lines]
    [(7, 514.682838, True, False), (8, 514.682838, False, False), (9, None, True, True)]
    >>> lines[0].time.isoformat(), lines[1].message
    ('2026-05-15T23:08:34.682838+00:00', 'file 734003200')
    >>> lines[2].time.isoformat(), lines[2].message
    ('2026-05-14T08:00:01+00:00', 'usb 1-1: new device')
    """
    result: list[KernelLine] = []
    previous: KernelLine | None = None
    raws = text.split("\n")
    if raws[-1] == "":
        raws.pop()
    for offset, raw in enumerate(raws):
        line = _read_line(first_number + offset, raw, clock, previous)
        if previous_boot and not line.previous_boot:
            wall = None if line.stamped and _MONOTONIC.match(line.text) else line.time
            line = replace(line, monotonic_s=None, time=wall, previous_boot=True)
        result.append(line)
        if line.stamped:
            previous = line
    return result


def _read_line(number: int, raw: str, clock: Clock, previous: KernelLine | None) -> KernelLine:
    raw = raw.rstrip("\r")
    match = _MONOTONIC.match(raw)
    if match:
        monotonic = _seconds(match.group(1), match.group(2))
        message = raw[match.end() :]
        host = _JOURNAL_HOST.match(message)
        if host:
            message = message[host.end() :]
        return KernelLine(number, raw, message, monotonic, clock.wall(monotonic), True)
    syslog = _syslog_time(raw, clock)
    if syslog is not None:
        wall, rest = syslog
        inner = _MONOTONIC.match(rest)
        message = rest[inner.end() :] if inner else rest
        before_boot = (
            wall is not None
            and clock.boot_time is not None
            and wall < clock.boot_time - timedelta(seconds=PREVIOUS_BOOT_SLACK_S)
        )
        since_boot = None
        if inner and not before_boot:
            since_boot = _seconds(inner.group(1), inner.group(2))
        return KernelLine(number, raw, message, since_boot, wall, True, before_boot)
    if previous is None:
        return KernelLine(number, raw, raw.strip(), None, None, False)
    return KernelLine(
        number,
        raw,
        raw.strip(),
        previous.monotonic_s,
        previous.time,
        False,
        previous.previous_boot,
    )


def _seconds(whole: str, fraction: str) -> float:
    return float(f"{whole}.{fraction}")


def _syslog_time(raw: str, clock: Clock) -> tuple[datetime | None, str] | None:
    """The wall-clock stamp in front of ``raw`` (None when unreadable) and the rest."""
    match = _RFC3339.match(raw)
    if match:
        return _zoned(match.group("stamp").replace(",", "."), match.group("zone")), raw[
            match.end() :
        ]
    match = _SYSLOG.match(raw)
    if match:
        return _traditional(match, clock), raw[match.end() :]
    match = _SHORT_FULL.match(raw)
    if match:
        zone = match.group("zone")
        stamp = match.group("stamp").replace(" ", "T")
        if zone.upper() in _UTC_NAMES:
            return _zoned(stamp, "+00:00"), raw[match.end() :]
        return _local(stamp, clock), raw[match.end() :]
    match = _CTIME.match(raw)
    if match:
        month = _MONTHS.index(match.group("month")) + 1
        stamp = (
            f"{match.group('year')}-{month:02d}-{int(match.group('day')):02d}T"
            f"{match.group('h')}:{match.group('m')}:{match.group('s')}"
        )
        return _local(stamp, clock), raw[match.end() :]
    return None


def _zoned(stamp: str, zone: str) -> datetime | None:
    """``2026-05-15T23:09:27.050705`` in ``+0200``/``+02:00``/``Z``, as UTC."""
    zone = "+00:00" if zone == "Z" else zone
    if len(zone) == 5:
        zone = f"{zone[:3]}:{zone[3:]}"
    whole, _, fraction = stamp.partition(".")
    if fraction:
        whole += "." + fraction[:6].ljust(6, "0")
    try:
        return datetime.fromisoformat(whole + zone).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _local(stamp: str, clock: Clock) -> datetime | None:
    """A stamp in the host's local time, as UTC (None when the host's offset is unknown)."""
    if clock.utc_offset is None:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
        return (moment - clock.utc_offset).replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def _traditional(match: re.Match[str], clock: Clock) -> datetime | None:
    """``May 15 23:09:27`` has no year and is local time: both come from the host."""
    now = clock.now
    if now is None or clock.utc_offset is None:
        return None
    try:
        zone = timezone(clock.utc_offset)
        local_now = now.astimezone(zone)
    except (OverflowError, ValueError):
        return None
    for year in (local_now.year, local_now.year - 1):
        try:
            stamp = datetime(
                year,
                _MONTHS.index(match.group("month")) + 1,
                int(match.group("day")),
                int(match.group("h")),
                int(match.group("m")),
                int(match.group("s")),
                tzinfo=zone,
            )
        except ValueError:
            continue
        if stamp <= local_now + timedelta(days=1):
            fraction = match.group("fraction")
            try:
                micro = (
                    timedelta(microseconds=int(fraction[:6].ljust(6, "0"))) if fraction else None
                )
                return stamp.astimezone(UTC) + (micro or timedelta(0))
            except OverflowError:
                return None
    return None
