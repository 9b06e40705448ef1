"""``sweep --every``: run sweeps on a schedule in the foreground, one at a time.

Start to start every ``every`` seconds, each later start delayed by a random 0..``jitter``
seconds so that many schedulers do not hit the same hosts at the same second. A sweep that
overruns its interval is followed at once by the next. SIGTERM lets the current sweep
finish, then exits (a second SIGTERM interrupts it); SIGINT interrupts it at once.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from forensics.fleet.report import FleetReport
from forensics.fleet.sweep import StopRequest, signal_handlers

_SLEEP_STEP_S = 0.2


@dataclass
class _Leaving:
    asked_by: str | None = None


def run_every(
    sweep_once: Callable[[StopRequest], FleetReport],
    every_s: float,
    jitter_s: float,
    say: Callable[[str], None],
) -> FleetReport | None:
    """Run ``sweep_once`` until a signal says stop; return the last report (None if none ran)."""
    leaving = _Leaving()
    stop = StopRequest()

    def on_term(name: str) -> None:
        if leaving.asked_by is None:
            leaving.asked_by = name
            say(f"{name}: finishing the current sweep, then exiting ({name} again to interrupt it)")
        else:
            stop.request(name)

    def on_int(name: str) -> None:
        leaving.asked_by = leaving.asked_by or name
        stop.request(name)

    last: FleetReport | None = None
    handlers = {signal.SIGTERM: on_term, signal.SIGINT: on_int}
    with signal_handlers(handlers):
        slot = time.monotonic()
        while leaving.asked_by is None:
            last = sweep_once(stop)
            if leaving.asked_by is not None:
                break
            slot += every_s
            if slot < time.monotonic():
                say("the sweep took longer than --every; starting the next one now")
                slot = time.monotonic()
            start_at = slot + random.uniform(0, jitter_s)
            while leaving.asked_by is None and time.monotonic() < start_at:
                time.sleep(min(_SLEEP_STEP_S, max(0.0, start_at - time.monotonic())))
    return last
