"""One dated event of a host, and the kinds of events: what a probe's ``timeline`` returns
and ``HostReport.timeline`` lists (built by ``forensics/judge/timeline.py``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

BOOT = "boot"
COLLECTION = "collection"
PROCESS_START = "process_start"
LOG_LAST_WRITE = "log_last_write"
GPU_FAILURE = "gpu_failure"
HUNG_TASK = "hung_task"
MACHINE_CHECK = "machine_check"
KERNEL_CRASH = "kernel_crash"
PCIE_ERROR = "pcie_error"
GPU_LOST = "gpu_lost"
GPU_INIT_FAILED = "gpu_init_failed"
SXID = "sxid"
# Kinds that end a process; a log that stops just before one of these ended early. The
# kernel prints a segfault or trap line only for a signal the process does not handle.
OOM_KILL = "oom_kill"
SEGFAULT = "segfault"
TRAP = "trap"
XID = "xid"
PROCESS_EXIT = "process_exit"
ENDINGS = frozenset({OOM_KILL, SEGFAULT, TRAP, XID, PROCESS_EXIT})


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
    pid: int | None = Field(
        default=None, description="The process it is about, if one (kernel events: host PID)."
    )
