"""Tasks the kernel's hung-task detector found blocked (D state) too long.

``kernel/hung_task.c`` prints, then a stack::

    INFO: task nccl-proxy:30412 blocked for more than 122 seconds.

Older kernels print the configured timeout (120), newer ones the real time blocked. Only
``hung_task_warnings`` reports (10 by default) are printed per boot: later hangs are silent.
The name may hold ``:`` (``kworker/u64:2``), so the PID is after the last colon.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import KernelLine

_HUNG = re.compile(r"task (?P<name>.+):(?P<pid>\d+) blocked for more than (?P<seconds>\d+) sec")


class HungTask(BaseModel):
    pid: int
    name: str
    blocked_s: int
    monotonic_s: float | None = None
    time: datetime | None = None
    previous_boot: bool = False
    evidence: EvidenceRef


def find_hung_tasks(lines: Sequence[KernelLine], section: str) -> list[HungTask]:
    """Every hung-task report in ``lines``.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = "[ 2400.1] INFO: task kworker/u64:2:30412 blocked for more than 122 seconds.\\n"
    >>> [(t.name, t.pid, t.blocked_s)
    ...  for t in find_hung_tasks(read_lines(log, 1, Clock()), "kernel_log")]
    [('kworker/u64:2', 30412, 122)]
    """
    tasks = []
    for line in lines:
        if " blocked for more than " not in line.message:
            continue
        match = _HUNG.search(line.message)
        if match is None:
            continue
        tasks.append(
            HungTask(
                pid=int(match.group("pid")),
                name=match.group("name"),
                blocked_s=int(match.group("seconds")),
                monotonic_s=line.monotonic_s,
                time=line.time,
                previous_boot=line.previous_boot,
                evidence=line.evidence(section),
            )
        )
    return tasks
