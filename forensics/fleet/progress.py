"""A progress bar for a sweep on a terminal: done, failed, in flight, time left; each host
that could not be collected is printed above the bar as it happens."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from forensics.core.escaping import inert
from forensics.fleet.inventory import ResolvedHost
from forensics.fleet.report import HostRun


class SweepProgress:
    """A ``SweepObserver`` that draws on ``console`` (stderr, a terminal)."""

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.failed = 0
        self.in_flight = 0
        self.progress = Progress(
            TextColumn("sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed, {task.fields[in_flight]} in flight"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self.task: TaskID = self.progress.add_task("sweep", total=total, failed=0, in_flight=0)

    def __enter__(self) -> SweepProgress:
        self.progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def host_started(self, host: ResolvedHost) -> None:
        self.in_flight += 1
        self.progress.update(self.task, in_flight=self.in_flight)

    def host_finished(self, row: HostRun) -> None:
        if row.started is not None:  # rows of hosts never started were never in flight
            self.in_flight = max(0, self.in_flight - 1)
        if not row.status.collected:
            self.failed += 1
            self.progress.console.print(
                Text(f"{inert(row.name)}: {row.status.value}: {inert(row.reason or '')}")
            )
        self.progress.update(self.task, advance=1, failed=self.failed, in_flight=self.in_flight)
