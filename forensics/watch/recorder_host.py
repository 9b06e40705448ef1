"""The flight recorder's host loop (``recorder.sh``): the script that starts it, and the
reading of one tick's lines into a ``Tick``.

What the host writes for one tick (the nonce shortened here to ``n``)::

    n F 1 4242
    n N 4242 cuzk
    n G 4242 /sys/fs/cgroup/memory/job
    n S 8400.12 1048576000 524288000 3 0.00 0.00
    n P 4242 Z 3 - 10752
    n D 4242 0 3
    n C /sys/fs/cgroup/memory/job 67108864 67108864 1
    n E

``F``, ``N`` and ``G`` come only on a tick that asked for the focus processes again.
Pure: text in, a ``Tick`` out; nothing here touches the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.core.cgroup_paths import UNLIMITED_AT
from forensics.core.numbers import parse_float, parse_int
from forensics.probes.recorder import CgroupSample, HostSample, ProcessSample
from forensics.remote.host_script import assignments, prelude, shell_file

FOCUS_MOST = 16
THREAD_CAP = 256


def loop_script(nonce: str, focus: str | None) -> str:
    """The whole text run on the host: the host script's prelude (private directory,
    traps, the focus function and regex, this collector's own pids), then the loop."""
    inputs = assignments({"nonce": nonce, "focus_most": FOCUS_MOST, "thread_cap": THREAD_CAP})
    return prelude(nonce, focus) + inputs + shell_file("forensics.watch", "recorder.sh")


@dataclass
class Tick:
    """One tick as the host reported it. ``focus`` is None unless the tick looked again."""

    host: HostSample | None = None
    processes: list[ProcessSample] = field(default_factory=list)
    cgroups: list[CgroupSample] = field(default_factory=list)
    focus: list[int] | None = None
    focus_matched: int = 0
    focus_problem: str | None = None
    names: dict[int, str] = field(default_factory=dict)
    cgroup_of: dict[int, str] = field(default_factory=dict)
    complete: bool = False


def read_tick_line(tick: Tick, nonce: str, line: str) -> None:
    """Fold one line of the host into ``tick``; lines not framed by ``nonce`` are ignored.

    >>> tick = Tick()
    >>> for text in ("n S 8400.12 1048576000 524288000 3 0.00 0.00", "n P 4242 Z 3 - 10752",
    ...              "n D 4242 0 3", "n E"):
    ...     read_tick_line(tick, "n", text)
    >>> tick.host.mem_available_kb, tick.processes[0].state, tick.processes[0].exit_code
    (524288000, 'Z', 10752)
    >>> tick.complete
    True
    """
    head, _, rest = line.partition(" ")
    if head != nonce:
        return
    kind, _, rest = rest.partition(" ")
    words = rest.split(" ")
    if kind == "E":
        tick.complete = True
    elif kind == "S" and len(words) == 6:
        tick.host = HostSample(
            uptime_s=parse_float(words[0]),
            mem_total_kb=parse_int(words[1]),
            mem_available_kb=parse_int(words[2]),
            oom_kill=parse_int(words[3]),
            pressure_some_avg10=parse_float(words[4]),
            pressure_full_avg10=parse_float(words[5]),
        )
    elif kind == "P" and len(words) == 5 and words[0].isdigit():
        tick.processes.append(
            ProcessSample(
                pid=int(words[0]),
                state=words[1][:8],
                threads=parse_int(words[2]),
                rss_kb=parse_int(words[3]),
                exit_code=parse_int(words[4]),
            )
        )
    elif kind == "D" and len(words) == 3 and words[0].isdigit():
        for process in tick.processes:
            if process.pid == int(words[0]):
                process.threads_in_d = parse_int(words[1])
    elif kind == "C" and len(words) == 4:
        tick.cgroups.append(
            CgroupSample(
                path=words[0],
                usage_bytes=parse_int(words[1]),
                limit_bytes=_limit(words[2]),
                oom_kill=parse_int(words[3]),
            )
        )
    elif kind == "F":
        tick.focus_matched = parse_int(words[0]) or 0
        tick.focus = [int(word) for word in words[1:] if word.isdigit()]
    elif kind == "X":
        tick.focus_problem = rest
    elif kind == "N" and words[0].isdigit():
        tick.names[int(words[0])] = rest.partition(" ")[2]
    elif kind == "G" and len(words) == 2 and words[0].isdigit():
        tick.cgroup_of[int(words[0])] = words[1]


def _limit(text: str) -> int | None:
    """A cgroup memory limit in bytes; None for none (v2 ``max``, v1's near-2**63 value).

    >>> _limit("67108864"), _limit("max"), _limit("9223372036854771712")
    (67108864, None, None)
    """
    value = parse_int(text)
    return None if value is None or value >= UNLIMITED_AT else value
