"""Time bounds for code that a hostile input could make loop: the bound interrupts it (a
hypothesis ``deadline`` alone only measures an example once it has ended)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType


class TookTooLong(Exception):
    pass


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Raise ``TookTooLong`` in the main thread if the block runs longer than ``seconds``."""

    def interrupt(number: int, frame: FrameType | None) -> None:
        raise TookTooLong(f"still running after {seconds:g}s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
