"""The flight recorder of one host (``forensics arm``): keep the last minutes of samples,
and the moment an event fires, collect on the same connection.

The client drives the host loop (``recorder.sh``): one line written per ``--every``, one
tick read back. The samples of the last ``--keep`` stay here, in memory. On an event the
full collection runs in a new exec channel of the same SSH connection, and the bundle
gains the ``recorder`` section (``probes/recorder.py``): the samples, any gap, the event.
A lost connection is retried with a capped backoff; the gap is printed at once and
recorded in the next bundle.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from forensics.collect import collect
from forensics.core.errors import AuthRefused, CollectionError, HostKeyRejected
from forensics.core.models import CollectOptions, Target
from forensics.core.units import describe_duration
from forensics.judge.host_report import HostReport
from forensics.probes.recorder import SECTION, Armed, Event, Gap, Sample, recording_line
from forensics.remote.line_stream import StreamEnded
from forensics.remote.loop_channel import LoopChannel
from forensics.watch.condition import Condition
from forensics.watch.recorder_events import Watcher
from forensics.watch.recorder_host import Tick, loop_script, read_tick_line

# Look for the focus processes again this often (a restart is `new-focus`).
REFOCUS_EVERY_S = 30.0
# Count the focus threads in state D this often (`stuck`).
THREADS_EVERY_S = 5.0
# A tick that takes longer than this (plus --every) means the host or the link is gone.
TICK_PATIENCE_S = 15.0
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0


@dataclass(frozen=True)
class ArmSettings:
    """What the operator asked ``forensics arm`` for."""

    options: CollectOptions
    out: Path
    every_s: float = 1.0
    keep_s: float = 300.0
    for_s: float | None = None
    kinds: frozenset[str] = frozenset()
    stuck_after_s: float = 60.0
    available: Condition | None = None
    keep_armed: bool = False
    timeout_s: float = 120.0


@dataclass
class Fired:
    """One triggered collection: the events, its report, and how long the bundle took."""

    events: list[Event]
    report: HostReport
    latency_s: float


@dataclass
class ArmOutcome:
    """Every bundle the recorder wrote, and every gap it had."""

    fired: list[Fired] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)


Say = Callable[[str], None]


def tick_words(count: int, every_s: float, cgroup_counted: bool) -> str:
    """What tick number ``count`` asks of the host loop: always a sample ("s"); the focus
    processes found again ("f") every ``REFOCUS_EVERY_S``; their threads' states ("d")
    every ``THREADS_EVERY_S``; the host's OOM-kill counter ("o") only while no focus
    cgroup's own counter could be read (``/proc/vmstat`` is the costliest file to read).

    >>> [tick_words(n, 1.0, True) for n in (0, 1, 5)]
    ['s f d', 's', 's d']
    >>> tick_words(1, 1.0, False)
    's o'
    """
    words = ["s"]
    if count % max(1, round(REFOCUS_EVERY_S / every_s)) == 0:
        words.append("f")
    if count % max(1, round(THREADS_EVERY_S / every_s)) == 0:
        words.append("d")
    if not cgroup_counted:
        words.append("o")
    return " ".join(words)


class Recorder:
    """``Recorder(target, settings, say).run()``: armed until an event (or, with
    ``keep_armed``, until ``for_s`` ends); ``on_fired`` hears each bundle as it is written."""

    def __init__(
        self,
        target: Target,
        settings: ArmSettings,
        say: Say,
        on_fired: Callable[[Fired], None] | None = None,
        on_status: Say | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.target = target
        self.settings = settings
        self.say = say
        self.on_fired = on_fired or (lambda fired: None)
        self.on_status = on_status or (lambda text: None)
        self.window: deque[Sample] = deque()
        self.pending_gaps: list[Gap] = []
        self.pending_events: list[Event] = []
        self.outcome = ArmOutcome()
        self.watcher = Watcher(
            kinds=settings.kinds,
            stuck_after_s=settings.stuck_after_s,
            available=settings.available,
        )
        self.armed_at = datetime.now(UTC)
        self.stop = stop or threading.Event()
        self._ends_at = None if settings.for_s is None else time.monotonic() + settings.for_s
        self._sampled = False

    def run(self) -> ArmOutcome:
        backoff = BACKOFF_FIRST_S
        lost_at: datetime | None = None
        lost_why = ""
        while not self._over():
            nonce = secrets.token_hex(8)
            try:
                with LoopChannel(
                    self.target, loop_script(nonce, self.settings.options.focus)
                ) as loop:
                    backoff = BACKOFF_FIRST_S
                    if lost_at is not None:
                        self._gap(lost_at, lost_why)
                        lost_at = None
                    self._watch(loop, nonce)
                    return self.outcome
            except (AuthRefused, HostKeyRejected):
                raise
            except CollectionError as error:
                if not self._sampled:
                    raise  # never armed: a host where the loop cannot run is exit 3
                if lost_at is None:
                    lost_at = datetime.now(UTC)
                    lost_why = error.message
                    self.say(
                        f"{self.target.name}: connection lost ({error.message}); the recorder "
                        "is blind until it is back"
                    )
                self.on_status(f"reconnecting in {describe_duration(backoff, tenths=True)}")
                self._sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
        if lost_at is not None:
            self._gap(lost_at, lost_why + " (still down when --for ended)")
        return self.outcome

    def _gap(self, lost_at: datetime, why: str) -> None:
        gap = Gap(start=lost_at, end=datetime.now(UTC), reason=why)
        self.pending_gaps.append(gap)
        self.outcome.gaps.append(gap)
        self.say(
            f"{self.target.name}: connection back after "
            f"{describe_duration(gap.seconds, tenths=True)}; "
            f"no samples from {gap.start:%H:%M:%S} to {gap.end:%H:%M:%S} UTC (recorded as a "
            "gap in the next bundle)"
        )

    def _over(self) -> bool:
        if self.stop.is_set():
            return True
        return self._ends_at is not None and time.monotonic() >= self._ends_at

    def _sleep(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        if self._ends_at is not None:
            until = min(until, self._ends_at)
        self.stop.wait(max(0.0, until - time.monotonic()))

    def _watch(self, loop: LoopChannel, nonce: str) -> None:
        """Tick until an event ends the watch, ``for_s`` ends or the recorder is stopped."""
        every = self.settings.every_s
        count = 0
        counted = False
        next_at = time.monotonic()
        while not self._over():
            tick = self._tick(loop, nonce, tick_words(count, every, counted))
            self._sampled = True
            count += 1
            counted = any(cgroup.oom_kill is not None for cgroup in tick.cgroups)
            now = datetime.now(UTC)
            self._keep(
                Sample(time=now, host=tick.host, processes=tick.processes, cgroups=tick.cgroups)
            )
            if tick.focus is not None and count == 1:
                self._status(tick)
            events = self.watcher.look(tick, now)
            if self.pending_events or events:
                self.pending_events += events
                self._fire(loop)
                if not self.settings.keep_armed:
                    return
                self.watcher.rearm()
                count = 0
            next_at = max(next_at + every, time.monotonic() - every)
            self._sleep(max(0.0, next_at - time.monotonic()))

    def _status(self, tick: Tick) -> None:
        if tick.focus_problem:
            self.say(f"{self.target.name}: --focus: the host's grep -E says: {tick.focus_problem}")
        names = ", ".join(f"{tick.names.get(pid) or '?'} ({pid})" for pid in tick.focus or [])
        self.on_status(f"armed; focus: {names or 'none running'}")

    def _tick(self, loop: LoopChannel, nonce: str, words: str) -> Tick:
        loop.send(words)
        tick = Tick()
        deadline = time.monotonic() + self.settings.every_s + TICK_PATIENCE_S
        while not tick.complete:
            line = loop.wait_line(deadline)
            if line is None:
                raise StreamEnded(
                    f"{self.target.name}: no sample within "
                    f"{describe_duration(TICK_PATIENCE_S, tenths=True)}"
                )
            read_tick_line(tick, nonce, line)
        return tick

    def _keep(self, sample: Sample) -> None:
        self.window.append(sample)
        oldest = sample.time - timedelta(seconds=self.settings.keep_s)
        while self.window and self.window[0].time < oldest:
            self.window.popleft()

    def _recording(self) -> bytes:
        armed = Armed(
            time=self.armed_at,
            focus=self.settings.options.focus,
            every_s=self.settings.every_s,
            keep_s=self.settings.keep_s,
            events=sorted(self.settings.kinds),
            names=dict(self.watcher.names),
            cgroup_of=dict(self.watcher.cgroup_of),
        )
        records: list[Armed | Sample | Event | Gap] = [
            armed,
            *self.window,
            *self.pending_gaps,
            *self.pending_events,
        ]
        return "".join(recording_line(record) for record in records).encode()

    def _fire(self, loop: LoopChannel) -> None:
        events = list(self.pending_events)
        fired_at = time.monotonic()
        what = "; ".join(f"{event.kind}: {event.detail}" for event in events)
        self.on_status(f"fired ({what}); collecting")
        report = collect(
            self.target,
            self.settings.options,
            self.settings.out,
            runner=loop.run_script,
            client_sections={SECTION: self._recording()},
        )
        fired = Fired(events=events, report=report, latency_s=time.monotonic() - fired_at)
        self.pending_events.clear()
        self.pending_gaps.clear()
        self.outcome.fired.append(fired)
        self.on_fired(fired)
