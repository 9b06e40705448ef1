"""The kernel's own failures: oopses, ``BUG:`` reports, panics, lockups and RCU stalls.

How kernels from 3.10 to 6.x word them (values invented)::

    BUG: unable to handle kernel NULL pointer dereference at 0000000000000010   (<= 4.x)
    BUG: unable to handle kernel paging request at ffffc90001a4f000            (<= 4.x)
    BUG: kernel NULL pointer dereference, address: 0000000000000008            (5.0+)
    BUG: unable to handle page fault for address: ffffb8c3c1a4f000             (5.0+)
    kernel BUG at mm/huge_memory.c:2263!
    Oops: 0000 [#1] SMP NOPTI
    general protection fault: 0000 [#1] SMP PTI                                (< 5.4)
    general protection fault, probably for non-canonical address 0xdead...: 0000 [#1] ...
    Oops: general protection fault, probably for non-canonical address ...    (6.x)
    invalid opcode: 0000 [#1] SMP NOPTI           /  Oops: invalid opcode: 0000 [#1] ...
    CPU: 3 PID: 1188 Comm: kworker/3:2 Tainted: P  OE  5.15.0-91-generic #101-Ubuntu
    RIP: 0010:nv_drm_atomic_commit+0x51/0x2a0 [nvidia_drm]   /   IP: [<ffff...>] f+0x23/0x90 [m]
    BUG: scheduling while atomic: python3/4412/0x00000002
    BUG: soft lockup - CPU#7 stuck for 22s! [nvidia-smi:4410]                  (3.x)
    watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python3:20931]         (4.x+)
    NMI watchdog: Watchdog detected hard LOCKUP on cpu 5      (watchdog: in 5.x+)
    INFO: rcu_sched detected stalls on CPUs/tasks: { 3} (detected by 5, ...)   (3.x, 4.x)
    rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:                       (5.x+)
    rcu: INFO: rcu_sched self-detected stall on CPU
    rcu: INFO: rcu_sched detected expedited stalls on CPUs/tasks: { 9-.... } 21257 jiffies
    Kernel panic - not syncing: Fatal exception

An oops is one event: the ``BUG:``/``kernel BUG at`` line that names what went wrong, the
``[#N]`` line, then the task (``CPU: … PID: … Comm:``) and where (``RIP:``/``IP:``, with the
module in brackets) within the next lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import EXCERPT_CHARS, KernelLine

CrashKind = Literal["oops", "bug", "panic", "soft_lockup", "hard_lockup", "rcu_stall"]

OOPS_LINES = 12
"""Lines after an oops's first line that may still name its task and instruction pointer."""

_BAD_ACCESS = re.compile(
    r"^BUG: (?:unable to handle kernel (?P<old>NULL pointer dereference|paging request) at"
    r"|kernel (?P<null>NULL pointer dereference), address:"
    r"|unable to handle (?P<page>page fault) for address:) *(?P<address>[0-9a-fA-Fx]*)"
)
_KERNEL_BUG_AT = re.compile(r"^kernel BUG at (?P<where>\S+)!")
_DIE = re.compile(
    r"^(?:Oops: )?(?P<what>general protection fault|invalid opcode|Oops|stack segment|"
    r"double fault|[a-z ]+)(?:, probably for non-canonical address 0x[0-9a-f]+)?: "
    r"(?P<code>[0-9a-f]{4}) \[#(?P<count>\d+)\]"
)
_TASK = re.compile(
    r"^CPU: (?P<cpu>\d+) (?:UID: \d+ )?PID: (?P<pid>\d+) Comm: (?P<name>.{1,16}?) "
    r"(?:Kdump: loaded )?(?:Not )?[Tt]ainted"
)
_WHERE = re.compile(
    r"^(?:RIP: [0-9a-f]{4}:|IP: \[<[0-9a-f]+>\] |pc : )(?P<function>[^ ]+)"
    r"(?: \[(?P<module>[^\]]+)\])?"
)
_SOFT = re.compile(
    r"(?:^|: )BUG: soft lockup - CPU#(?P<cpu>\d+) stuck for (?P<seconds>\d+)s! "
    r"\[(?P<name>.+):(?P<pid>\d+)\]"
)
_HARD = re.compile(r"Watchdog detected hard LOCKUP on cpu (?P<cpu>\d+)")
_RCU = re.compile(
    r"^(?:rcu: )?INFO: (?P<flavor>rcu_[a-z_]+|rcu) (?P<how>detected stalls|self-detected stall|"
    r"detected expedited stalls)"
)
_PANIC = re.compile(r"^Kernel panic - not syncing: ?(?P<reason>.*)$")
_OTHER_BUG = re.compile(r"^BUG: (?P<what>[A-Za-z][^:!]*?)(?:[:!]|$)")
_BUG_KINDS = {
    "scheduling while atomic": "scheduling_while_atomic",
    "sleeping function called from invalid context at": "sleeping_in_atomic",
    "Bad page state in process": "bad_page_state",
    "Bad page map in process": "bad_page_map",
    "Bad rss-counter state mm": "bad_rss_counter",
    "workqueue lockup - pool cpus=": "workqueue_lockup",
    "spinlock lockup suspected on CPU#": "spinlock_lockup",
    "KASAN": "kasan",
    "KFENCE": "kfence",
    "Dentry": "dentry",
    "looking up invalid subclass": "lockdep",
}
_WORDS = ("BUG", "LOCKUP", "INFO: rcu", "[#", "panic")
_OOPS_KINDS = {
    "NULL pointer dereference": "null_pointer",
    "paging request": "paging_request",
    "page fault": "paging_request",
    "general protection fault": "general_protection",
    "invalid opcode": "invalid_opcode",
}


class KernelCrash(BaseModel):
    """One failure of the kernel itself, as the log reported it."""

    kind: CrashKind
    detail: str = Field(
        description="oops: null_pointer, paging_request, general_protection, kernel_bug, "
        "invalid_opcode, oops; bug: scheduling_while_atomic, bad_page_state, ...; panic: its "
        "reason; rcu_stall: the RCU flavor (rcu_sched, rcu_preempt)."
    )
    cpu: int | None = None
    pid: int | None = None
    name: str | None = Field(default=None, description="The task running when it happened.")
    stuck_s: int | None = Field(default=None, description="Soft lockups: seconds stuck.")
    function: str | None = Field(default=None, description="Oopses: where (RIP/IP).")
    module: str | None = Field(default=None, description="Oopses: the module of that function.")
    where: str | None = Field(default=None, description="kernel BUG at: the source file and line.")
    message: str
    monotonic_s: float | None = None
    time: datetime | None = None
    previous_boot: bool = False
    evidence: list[EvidenceRef] = Field(default_factory=list)


def find_crashes(lines: Sequence[KernelLine], section: str) -> list[KernelCrash]:
    """Every kernel failure in ``lines``, in order.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 12.0] BUG: kernel NULL pointer dereference, address: 0000000000000008\\n"
    ...     "[ 12.0] Oops: 0000 [#1] SMP NOPTI\\n"
    ...     "[ 12.0] CPU: 3 PID: 1188 Comm: kworker/3:2 Tainted: P  OE  5.15.0-91-generic #1\\n"
    ...     "[ 12.0] RIP: 0010:nv_drm_atomic_commit+0x51/0x2a0 [nvidia_drm]\\n"
    ...     "[ 12.1] Kernel panic - not syncing: Fatal exception\\n"
    ...     "[ 90.0] watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python3:20931]\\n"
    ...     "[ 95.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:\\n"
    ... )
    >>> for c in find_crashes(read_lines(log, 1, Clock()), "k"):
    ...     print(c.kind, c.detail, c.name, c.pid, c.module, c.stuck_s)
    oops null_pointer kworker/3:2 1188 nvidia_drm None
    panic Fatal exception None None None None
    soft_lockup soft lockup python3 20931 None 23
    rcu_stall rcu_preempt None None None None
    """
    crashes: list[KernelCrash] = []
    oops: KernelCrash | None = None
    oops_line = 0
    for index, line in enumerate(lines):
        message = line.message
        if oops is not None and index - oops_line > OOPS_LINES:
            oops = None
        if oops is not None and _enrich(oops, message, line.evidence(section)):
            continue
        crash = _read(message, line, section)
        if crash is None:
            continue
        if crash.kind == "oops" and oops is not None and _continues(oops, crash, message):
            oops.evidence.append(line.evidence(section))
            continue
        crashes.append(crash)
        if crash.kind == "oops":
            oops, oops_line = crash, index
    return crashes


def _read(message: str, line: KernelLine, section: str) -> KernelCrash | None:
    if not any(word in message for word in _WORDS):
        return None
    found = _classify(message)
    if found is None:
        return None
    kind, detail, fields = found
    return KernelCrash(
        kind=kind,
        detail=detail,
        message=message[:EXCERPT_CHARS],
        monotonic_s=line.monotonic_s,
        time=line.time,
        previous_boot=line.previous_boot,
        evidence=[line.evidence(section)],
        **fields,
    )


def _classify(message: str) -> tuple[CrashKind, str, dict[str, int | str | None]] | None:
    if (soft := _SOFT.search(message)) is not None:
        return (
            "soft_lockup",
            "soft lockup",
            {
                "cpu": int(soft.group("cpu")),
                "stuck_s": int(soft.group("seconds")),
                "name": soft.group("name"),
                "pid": int(soft.group("pid")),
            },
        )
    if (hard := _HARD.search(message)) is not None:
        return "hard_lockup", "hard lockup", {"cpu": int(hard.group("cpu"))}
    if (rcu := _RCU.match(message)) is not None:
        return "rcu_stall", rcu.group("flavor"), {}
    if (panic := _PANIC.match(message)) is not None:
        return "panic", panic.group("reason").strip() or "unknown", {}
    if (access := _BAD_ACCESS.match(message)) is not None:
        what = access.group("old") or access.group("null") or access.group("page") or ""
        return "oops", _OOPS_KINDS.get(what, "oops"), {}
    if (bug_at := _KERNEL_BUG_AT.match(message)) is not None:
        return "oops", "kernel_bug", {"where": bug_at.group("where")}
    if (die := _DIE.match(message)) is not None:
        return "oops", _OOPS_KINDS.get(die.group("what"), "oops"), {}
    if _OTHER_BUG.match(message) is not None:
        kind = next((k for text, k in _BUG_KINDS.items() if message[5:].startswith(text)), None)
        return "bug", kind or "other", {}
    return None


def _continues(oops: KernelCrash, crash: KernelCrash, message: str) -> bool:
    """The ``[#N]`` line after a ``BUG:`` line is the same oops; it may name the kind."""
    if "[#" not in message:
        return False
    if oops.detail == "oops":
        oops.detail = crash.detail
    return True


def _enrich(oops: KernelCrash, message: str, ref: EvidenceRef) -> bool:
    """The task and the instruction pointer printed after an oops's first lines."""
    if oops.pid is None and (task := _TASK.match(message)) is not None:
        oops.cpu, oops.pid = int(task.group("cpu")), int(task.group("pid"))
        oops.name = task.group("name").strip()
        oops.evidence.append(ref)
        return True
    if oops.function is None and (where := _WHERE.match(message)) is not None:
        oops.function, oops.module = where.group("function"), where.group("module")
        oops.evidence.append(ref)
        return True
    return False
