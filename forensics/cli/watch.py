"""``forensics watch`` and ``forensics wait``: measure memory as it moves, over ONE SSH
connection, instead of guessing how long a release takes.

Both run one sampling loop on the host (``forensics/watch/sampler.py``) for their whole
life and read one line per interval. ``wait`` is a deploy gate: exit 0 as soon as every
condition holds, 1 at the timeout, with the measured rate and an ETA from a least-squares
fit over the recent samples on the way.
"""

from __future__ import annotations

import enum
import math
import secrets
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Annotated

import typer

from forensics.cli.messages import say
from forensics.cli.options import Given, declared_options, read_duration
from forensics.core.cgroup_paths import V2_ROOT
from forensics.core.errors import CollectionError, Interrupted, UsageError
from forensics.core.escaping import inert, inert_json
from forensics.core.exit_status import ExitStatus
from forensics.core.models import SshOptions, Target
from forensics.core.targets import parse_target
from forensics.core.units import describe_duration, gib
from forensics.watch.trend import seconds_until, slope

if TYPE_CHECKING:
    # SSH and the sampler load when a watch runs, in the command's body: not for --help
    # (docs/ARCHITECTURE.md, "Start-up").
    from forensics.remote.line_stream import LineStream
    from forensics.watch.condition import Condition
    from forensics.watch.sampler import MemorySample, SampledCgroup

MIN_EVERY_S = 0.1
# Rates in `watch` follow the last few samples; `wait` fits over more, for a steadier ETA.
RATE_SAMPLES = 5
FIT_SAMPLES = 10
# A host under memory pressure can delay a sample; say so after this long, keep waiting.
LATE_AFTER_S = 10.0


class WatchFormat(enum.StrEnum):
    text = "text"
    json = "json"


TargetArgument = Annotated[
    str,
    typer.Argument(help="'local' (this machine, no SSH), [user@]host[:port], or an SSH alias."),
]
CgroupOption = Annotated[
    str | None,
    typer.Option(
        help="Cgroup directory on the host to sample, under /sys/fs/cgroup, e.g. "
        "/sys/fs/cgroup/memory/job (default: PID 1's memory cgroup)."
    ),
]


@declared_options(SshOptions)
def watch_command(
    target: TargetArgument = "local",
    every: Annotated[str, typer.Option(help="Interval: 2s, 500ms, 1m.")] = "2s",
    duration: Annotated[
        str | None, typer.Option("--for", help="Stop after this long (default: until Ctrl-C).")
    ] = None,
    format: Annotated[
        WatchFormat,
        typer.Option("--format", "-f", help="text: a line per sample; json: JSON lines."),
    ] = WatchFormat.text,
    cgroup: CgroupOption = None,
    *,
    given: Given,
) -> None:
    """Sample memory at an interval over one SSH connection: host used/available, Mlocked,
    cgroup usage and limit, and how fast each moves (GiB/s).

    Examples:

      forensics watch gpu-a --every 2s --for 5m

      forensics watch root@ssh6.vast.ai:17008 --format json > samples.jsonl
    """
    every_s = _interval(every)
    total_s = read_duration("--for", duration) if duration is not None else None
    count = None if total_s is None else _intervals(total_s, every_s) + 1
    _check_cgroup_option(cgroup)
    parsed = parse_target(target, given.read(SshOptions))
    from forensics.remote.line_stream import LineStream
    from forensics.watch.sampler import sampler_script

    nonce = secrets.token_hex(8)
    try:
        with LineStream(parsed, sampler_script(nonce, every_s, count, cgroup)) as stream:
            # Wall clock from the open connection; one interval more for the last sample.
            ends_at = None if total_s is None else time.monotonic() + total_s + every_s
            _watch(stream, nonce, every_s, Until(count, ends_at), format, parsed)
    except (KeyboardInterrupt, Interrupted):
        pass  # Ctrl-C is how a watch without --for ends
    raise typer.Exit(ExitStatus.ok)


def _watch(
    stream: LineStream,
    nonce: str,
    every_s: float,
    until: Until,
    format: WatchFormat,
    target: Target,
) -> None:
    """Print samples until ``until`` says stop, whatever the host sends or fails to send."""
    from forensics.watch.sampler import MemorySample, SampledCgroup, read_line

    history: deque[MemorySample] = deque(maxlen=RATE_SAMPLES)
    sampled: SampledCgroup | None = None
    seen = 0
    while (remaining := until.remaining(seen)) > 0:
        wait_s = every_s + LATE_AFTER_S
        line = stream.next_line(min(wait_s, remaining))
        if line is None:
            if until.remaining(seen) > 0:
                _note(f"no sample from {target.name} for {wait_s:g} s; still waiting")
            elif seen == 0:
                raise CollectionError(f"{target.name}: no sample came back before --for ended")
            continue
        item = read_line(nonce, line, datetime.now(UTC))
        if isinstance(item, SampledCgroup):
            sampled = item
            if format is WatchFormat.text:
                _out(_watch_header(target, every_s, item))
        elif isinstance(item, MemorySample):
            seen += 1
            history.append(item)
            sample = _with_rates(item, history, sampled)
            if format is WatchFormat.json:
                _out(inert_json(sample.model_dump_json()))
            else:
                _out(_watch_row(sample))


@dataclass(frozen=True)
class Until:
    """When ``watch`` stops: after ``samples`` samples or at ``ends_at`` (wall clock,
    ``time.monotonic()``), whichever comes first; None for either: no such bound.

    >>> Until(samples=3, ends_at=None).remaining(3), Until(None, None).remaining(99)
    (0.0, inf)
    """

    samples: int | None
    ends_at: float | None

    def remaining(self, seen: int) -> float:
        if self.samples is not None and seen >= self.samples:
            return 0.0
        return math.inf if self.ends_at is None else max(0.0, self.ends_at - time.monotonic())


def _watch_header(target: Target, every_s: float, sampled: SampledCgroup) -> str:
    where = (
        f"cgroup v{sampled.version} {sampled.path}"
        if sampled.version
        else "no memory cgroup visible"
    )
    columns = (
        f"{'time UTC':<9} {'host used':>10} {'host avail':>10} {'host rate':>13} "
        f"{'host mlock':>10}   {'cgroup usage / limit':<30} {'cgroup rate':>13}"
    )
    return f"{target.name}: every {every_s:g} s, {where}\n{columns}"


def _watch_row(sample: MemorySample) -> str:
    usage = ""
    if sample.cgroup_current_bytes is not None:
        limit = sample.cgroup_limit_bytes
        usage = f"{gib(sample.cgroup_current_bytes)} / " + (
            f"{gib(limit)} {100 * sample.cgroup_current_bytes / limit:.1f}%"
            if limit
            else "no limit"
        )
    return (
        f"{sample.time:%H:%M:%S}  {_size(sample.mem_used_bytes):>10} "
        f"{_size(sample.mem_available_bytes):>10} {_rate(sample.used_rate_bytes_per_s):>13} "
        f"{_size(sample.mlocked_bytes):>10}   {usage:<30} "
        f"{_rate(sample.cgroup_rate_bytes_per_s):>13}"
    )


@declared_options(SshOptions)
def wait_command(
    target: TargetArgument = "local",
    available: Annotated[
        str | None, typer.Option(help="Condition on MemAvailable, e.g. '>=500GiB'.")
    ] = None,
    cgroup_current: Annotated[
        str | None, typer.Option(help="Condition on the cgroup's usage, e.g. '<=250GiB'.")
    ] = None,
    timeout: Annotated[str, typer.Option(help="Give up after this long (exit 1).")] = "10m",
    every: Annotated[str, typer.Option(help="Sampling interval.")] = "1s",
    cgroup: CgroupOption = None,
    *,
    given: Given,
) -> None:
    """Wait until memory is back: exit 0 as soon as every condition holds, 1 at the
    timeout; shows the measured release rate and the ETA from a fit over recent samples.

    Exit status: 0 condition met; 1 timed out; 2 bad option (condition, unit, duration);
    3 could not connect or sample.

    Examples:

      forensics wait gpu-a --available '>=500GiB' --timeout 10m

      forensics wait gpu-a --available '>=500GiB' --cgroup-current '<=250GiB' && ./start-daemon
    """
    if available is None and cgroup_current is None:
        raise UsageError("wait needs a condition: --available '>=500GiB' and/or --cgroup-current")
    timeout_s = read_duration("--timeout", timeout)
    every_s = _interval(every)
    _check_cgroup_option(cgroup)
    parsed = parse_target(target, given.read(SshOptions))
    from forensics.remote.line_stream import LineStream
    from forensics.watch.condition import parse_condition
    from forensics.watch.sampler import sampler_script

    conditions = []
    if available is not None:
        conditions.append(parse_condition("available", available))
    if cgroup_current is not None:
        conditions.append(parse_condition("cgroup_current", cgroup_current))
    nonce = secrets.token_hex(8)
    count = _intervals(timeout_s, every_s) + 2
    started = time.monotonic()
    with LineStream(parsed, sampler_script(nonce, every_s, count, cgroup)) as stream:
        status = _wait(stream, nonce, conditions, started, timeout_s, parsed)
    raise typer.Exit(status)


def _wait(
    stream: LineStream,
    nonce: str,
    conditions: Sequence[Condition],
    started: float,
    timeout_s: float,
    target: Target,
) -> int:
    from forensics.watch.sampler import MemorySample, SampledCgroup, read_line

    history: deque[MemorySample] = deque(maxlen=FIT_SAMPLES)
    first: MemorySample | None = None
    _out(f"{target.name}: waiting until {' and '.join(c.describe() for c in conditions)}")
    while (remaining := started + timeout_s - time.monotonic()) > 0:
        line = stream.next_line(remaining)
        if line is None:
            break
        item = read_line(nonce, line, datetime.now(UTC))
        if isinstance(item, SampledCgroup):
            _check_cgroup(item, conditions, target)
            continue
        if not isinstance(item, MemorySample):
            continue
        _check_sample(item, conditions, target)
        first = first or item
        history.append(item)
        elapsed = item.host_uptime_s - first.host_uptime_s
        if all(c.holds(_value(c, item)) for c in conditions):
            took = describe_duration(elapsed, tenths=True)
            _out(f"met after {took}: {_state(conditions, history)}")
            return ExitStatus.ok
        eta = _eta(conditions, history, remaining)
        _out(f"+{elapsed:6.1f}s  {_state(conditions, history)}  {eta}")
    last = f": {_state(conditions, history)}" if history else ""
    _out(f"timed out after {describe_duration(timeout_s, tenths=True)}{last}")
    return ExitStatus.findings


def _check_cgroup(sampled: SampledCgroup, conditions: Sequence[Condition], target: Target) -> None:
    if sampled.version == 0 and any(c.metric == "cgroup_current" for c in conditions):
        raise CollectionError(
            f"{target.name}: no memory cgroup is visible, so --cgroup-current cannot be "
            "checked; name one with --cgroup DIR"
        )


def _check_sample(sample: MemorySample, conditions: Sequence[Condition], target: Target) -> None:
    for condition in conditions:
        if condition.value(sample) is None:
            raise CollectionError(
                f"{target.name}: the host does not report {condition.label} "
                "(no MemAvailable in /proc/meminfo, or the cgroup file went away)"
            )


def _value(condition: Condition, sample: MemorySample) -> int:
    value = condition.value(sample)
    assert value is not None
    return value


def _state(conditions: Sequence[Condition], history: Sequence[MemorySample]) -> str:
    last = history[-1]
    words = []
    for condition in conditions:
        rate = slope(_points(condition, history))
        words.append(
            f"{condition.label} {gib(_value(condition, last))} "
            f"(want {condition.comparison} {gib(condition.threshold_bytes)}; "
            f"{_movement(condition, rate)})"
        )
    return ", ".join(words)


def _movement(condition: Condition, rate: float | None) -> str:
    if rate is None:
        return "rate: need 2 samples"
    toward = (rate > 0) == condition.wants_more() and rate != 0
    verb = "releasing" if condition.metric == "available" and rate > 0 else "moving"
    if condition.metric == "cgroup_current" and rate < 0:
        verb = "releasing"
    return f"{verb} {_rate(rate)}" + ("" if toward else ", not toward the goal")


def _eta(
    conditions: Sequence[Condition], history: Sequence[MemorySample], remaining_s: float
) -> str:
    """When the conditions will hold at the measured rate, or why they will not: a trend
    away from the goal, or one too slow to get there before ``--timeout``."""
    etas = []
    for condition in conditions:
        if condition.holds(_value(condition, history[-1])):
            continue
        points = _points(condition, history)
        if len(points) < 3:
            return "ETA: measuring"
        eta = seconds_until(points, condition.threshold_bytes)
        if eta is None:
            rate = slope(points) or 0.0
            trend = "falling" if rate < 0 else "rising" if rate > 0 else "not moving"
            return f"not reachable at the current rate: {condition.label} is {trend}"
        if eta > remaining_s:
            return (
                f"not reachable before --timeout at the current rate "
                f"({condition.label} would need {describe_duration(eta, tenths=True)})"
            )
        etas.append(eta)
    fit = f"fit over {len(history)} samples"
    return f"ETA {describe_duration(max(etas), tenths=True)} ({fit})" if etas else ""


def _points(condition: Condition, history: Sequence[MemorySample]) -> list[tuple[float, float]]:
    return [(s.host_uptime_s, float(_value(condition, s))) for s in history]


def _with_rates(
    sample: MemorySample, history: Sequence[MemorySample], sampled: SampledCgroup | None
) -> MemorySample:
    used = [(s.host_uptime_s, float(s.mem_used_bytes)) for s in history
            if s.mem_used_bytes is not None]  # fmt: skip
    current = [(s.host_uptime_s, float(s.cgroup_current_bytes)) for s in history
               if s.cgroup_current_bytes is not None]  # fmt: skip
    return sample.model_copy(
        update={
            "used_rate_bytes_per_s": _rounded(slope(used)),
            "cgroup_rate_bytes_per_s": _rounded(slope(current)),
            "cgroup": sampled.path if sampled else None,
        }
    )


def _intervals(total_s: float, every_s: float) -> int:
    """Whole intervals in ``total_s``, so that 0.6 s at 0.2 s is 3, not 2.9999 -> 2."""
    return int(total_s / every_s + 1e-6)


def _rounded(rate: float | None) -> float | None:
    return None if rate is None else round(rate)


def _interval(text: str) -> float:
    every_s = read_duration("--every", text, positive=False)
    if every_s < MIN_EVERY_S:
        raise UsageError(f"--every {text!r}: the shortest interval is {MIN_EVERY_S:g}s")
    return every_s


def _check_cgroup_option(cgroup: str | None) -> None:
    """``--cgroup`` names a directory of the cgroup file system, nothing else on the host.

    >>> _check_cgroup_option("/sys/fs/cgroup/memory/job")
    >>> _check_cgroup_option("/sys/fs/cgroup/../../etc")
    Traceback (most recent call last):
    ...
    forensics.core.errors.UsageError: --cgroup '/sys/fs/cgroup/../../etc': name a directory ...
    """
    if cgroup is None:
        return
    path = PurePosixPath(cgroup)
    if not path.is_absolute() or ".." in path.parts or not path.is_relative_to(V2_ROOT):
        raise UsageError(
            f"--cgroup {cgroup!r}: name a directory under {V2_ROOT}, e.g. /sys/fs/cgroup/memory/job"
        )


def _size(value: int | None) -> str:
    return "-" if value is None else gib(value)


def _rate(value: float | None) -> str:
    """A rate in GiB/s with its sign; a rate that rounds to zero is +0.00, never -0.00.

    >>> _rate(-1.0), _rate(-3 * 2**30), _rate(None)
    ('+0.00 GiB/s', '-3.00 GiB/s', '')
    """
    if value is None:
        return ""
    shown = round(value / (1 << 30), 2) or 0.0
    return f"{shown:+.2f} GiB/s"


def _out(text: str) -> None:
    """A line on stdout; cgroup paths and names come from the host, so it is made inert."""
    sys.stdout.write(inert(text) + "\n")
    sys.stdout.flush()


def _note(text: str) -> None:
    say(text)
