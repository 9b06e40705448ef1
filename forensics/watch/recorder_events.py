"""When the flight recorder fires: each tick of the host compared with what came before.

Pure: ticks in, ``Event`` records out; the clock is the caller's (``now``) and the host's
own uptime (for how long a thread has been in D, so network jitter bends nothing).

>>> from forensics.probes.recorder import ProcessSample
>>> from datetime import UTC, datetime
>>> now = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)
>>> watcher = Watcher(kinds=frozenset(EVENT_KINDS))
>>> watcher.look(Tick(focus=[42], names={42: "cuzk"}, complete=True), now)
[]
>>> [(e.kind, e.pid, e.exit_code) for e in watcher.look(
...     Tick(processes=[ProcessSample(pid=42, state="Z", threads=1, exit_code=42 << 8)]), now)]
[('zombie', 42, 10752)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from forensics.core.units import describe_duration, gib
from forensics.probes.recorder import Event, ProcessSample, exit_words
from forensics.watch.condition import Condition
from forensics.watch.event_kinds import EVENT_KINDS
from forensics.watch.recorder_host import Tick

__all__ = ["EVENT_KINDS", "Watcher"]


@dataclass
class Watcher:
    """What the recorder knows between ticks: the focus processes, the last counters, and
    what already fired (an event fires once)."""

    kinds: frozenset[str]
    stuck_after_s: float = 60.0
    available: Condition | None = None
    names: dict[int, str] = field(default_factory=dict)
    cgroup_of: dict[int, str] = field(default_factory=dict)
    focus_known: bool = False
    host_oom: int | None = None
    cgroup_oom: dict[str, int] = field(default_factory=dict)
    in_d_since: dict[int, float] = field(default_factory=dict)
    fired: set[tuple[str, int | None]] = field(default_factory=set)
    memory_low: bool = False
    ended: set[int] = field(default_factory=set)

    def rearm(self) -> None:
        """After a triggered collection: forget what fired, so it can fire again, except
        the processes seen ending: a zombie still there is not a new one, nor a restart."""
        for kind, pid in self.fired:
            if kind in ("exit", "zombie") and pid is not None:
                self.ended.add(pid)
                self.names.pop(pid, None)
                self.cgroup_of.pop(pid, None)
        self.fired.clear()
        self.in_d_since.clear()
        self.memory_low = False

    def look(self, tick: Tick, now: datetime) -> list[Event]:
        events: list[Event] = []
        if tick.focus is not None:
            events += self._focus(tick, now)
        for process in tick.processes:
            events += self._process(process, tick, now)
        events += self._oom(tick, now)
        events += self._memory(tick, now)
        return [event for event in events if event.kind in self.kinds]

    def _event(self, kind: str, now: datetime, pid: int | None, **values: object) -> list[Event]:
        key = (kind, pid)
        if key in self.fired:
            return []
        self.fired.add(key)
        name = self.names.get(pid) if pid is not None else None
        return [Event(time=now, kind=kind, pid=pid, name=name, **values)]

    def _focus(self, tick: Tick, now: datetime) -> list[Event]:
        assert tick.focus is not None
        events: list[Event] = []
        found = set(tick.focus) - self.ended
        for pid in sorted(set(self.names) - found):
            if ("zombie", pid) not in self.fired and ("exit", pid) not in self.fired:
                events += self._event(
                    "exit", now, pid, detail="gone when the recorder looked for it again"
                )
        for pid in tick.focus:
            if pid not in self.names and pid not in self.ended:
                self.names[pid] = tick.names.get(pid, "")
                if tick.cgroup_of.get(pid, "-") != "-":
                    self.cgroup_of[pid] = tick.cgroup_of[pid]
                if self.focus_known:
                    events += self._event(
                        "new-focus",
                        now,
                        pid,
                        detail=f"a new focus process {self.names[pid] or '?'} (pid {pid})",
                    )
        for pid in set(self.names) - found:
            if any(key[1] == pid for key in self.fired):
                del self.names[pid]
        self.focus_known = True
        return events

    def _process(self, process: ProcessSample, tick: Tick, now: datetime) -> list[Event]:
        pid = process.pid
        if pid in self.ended:
            return []
        if process.state == "gone":
            if ("zombie", pid) in self.fired or ("exit", pid) in self.fired:
                return []
            return self._event(
                "exit",
                now,
                pid,
                detail="gone between two samples: its parent reaped it before the exit "
                "status could be read",
            )
        if process.state.startswith("Z"):
            kind = "zombie" if "zombie" in self.kinds else "exit"
            threads = process.threads or 1
            if threads > 1:
                detail = f"state Zl: its main thread exited, {threads} threads still run"
            else:
                detail = f"state Z: {exit_words(process.exit_code) or 'exit status unreadable'}"
            return self._event(
                kind, now, pid, exit_code=process.exit_code, threads=threads, detail=detail
            )
        if process.threads_in_d is None or tick.host is None or tick.host.uptime_s is None:
            return []
        if process.threads_in_d == 0:
            self.in_d_since.pop(pid, None)
            return []
        since = self.in_d_since.setdefault(pid, tick.host.uptime_s)
        stuck_for = tick.host.uptime_s - since
        if stuck_for < self.stuck_after_s:
            return []
        return self._event(
            "stuck",
            now,
            pid,
            detail=(
                f"{process.threads_in_d} thread(s) in state D for "
                f"{describe_duration(stuck_for, tenths=True)}"
            ),
        )

    def _oom(self, tick: Tick, now: datetime) -> list[Event]:
        """The focus cgroup's own counter names the cgroup (and the pid, when one focus
        process lives there). The host's counter counts kills anywhere on the host, other
        tenants' included, so it fires only when no focus cgroup counter can be read."""
        details: list[tuple[int | None, str]] = []
        for cgroup in tick.cgroups:
            if cgroup.oom_kill is None:
                continue
            before = self.cgroup_oom.get(cgroup.path)
            self.cgroup_oom[cgroup.path] = cgroup.oom_kill
            if before is not None and cgroup.oom_kill > before:
                pids = [pid for pid, path in self.cgroup_of.items() if path == cgroup.path]
                details.append(
                    (
                        pids[0] if len(pids) == 1 else None,
                        f"the OOM-kill counter of {cgroup.path} went from {before} to "
                        f"{cgroup.oom_kill}",
                    )
                )
        host_oom = tick.host.oom_kill if tick.host is not None else None
        if host_oom is not None:
            counted = any(cgroup.oom_kill is not None for cgroup in tick.cgroups)
            if self.host_oom is not None and host_oom > self.host_oom and not counted:
                details.append(
                    (None, f"the host's OOM-kill counter went from {self.host_oom} to {host_oom}")
                )
            self.host_oom = host_oom
        events: list[Event] = []
        for pid, detail in details[:1]:
            self.fired.discard(("oom", pid))
            events += self._event("oom", now, pid, detail=detail)
        return events

    def _memory(self, tick: Tick, now: datetime) -> list[Event]:
        if self.available is None or tick.host is None or tick.host.mem_available_kb is None:
            return []
        value = tick.host.mem_available_kb * 1024
        if not self.available.holds(value):
            self.memory_low = False
            return []
        if self.memory_low:
            return []
        self.memory_low = True
        self.fired.discard(("memory", None))
        return self._event(
            "memory", now, None, detail=f"MemAvailable {gib(value)}: {self.available.describe()}"
        )
