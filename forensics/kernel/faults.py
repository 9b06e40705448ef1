"""User processes the kernel killed for a CPU fault: segfaults, general protection faults
and other traps (invalid opcode, divide error).

As x86 prints them (6.18 on the test VM; older kernels lack the file offset and the CPU)::

    segv[15759]: segfault at 0 ip 000055d938c7d1a2 sp 00007fff5ad38c40 error 4 in
        crash[11a2,55d938c7d000+1000] likely on CPU 1 (core 1, socket 0)
    traps: gpf[15760] general protection fault ip:555d112101dc sp:7fff27f6d160 error:0 in
        crash[11dc,555d11210000+1000]
    traps: ud2[15761] trap invalid opcode ip:55a36046c202 sp:7fffe3556a40 error:0 in ...
    traps: java[31337] general protection ip:7f3a9c2b1d40 sp:7f3a1b7fd9a0 error:0 in ...

(the last is how 3.x and early 4.x word a general protection fault). The error codes are
hex: ``error 14`` is 0x14, a user-mode instruction fetch from an unmapped address. A name
may hold ``[``, ``:`` or spaces (``ray::IDLE``), so it is everything before the last
``[PID]`` that precedes the fault words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import KernelLine

_SEGFAULT = re.compile(
    r"^(?P<name>.+)\[(?P<pid>\d+)\]: segfault at (?P<address>[0-9a-fA-F]+) "
    r"ip (?P<ip>[0-9a-fA-F]+) sp (?P<sp>[0-9a-fA-F]+) error (?P<error>[0-9a-fA-F]+)"
    r"(?: in (?P<where>[^\[\s]+)\[)?"
)
_TRAP = re.compile(
    r"^(?:traps: )?(?P<name>.+)\[(?P<pid>\d+)\] (?P<kind>general protection(?: fault)?|"
    r"trap [a-zA-Z0-9 ]+?) ip:(?P<ip>[0-9a-fA-F]+) sp:(?P<sp>[0-9a-fA-F]+) "
    r"error:(?P<error>[0-9a-fA-F]+)(?: in (?P<where>[^\[\s]+)\[)?"
)
_SUPPRESSED = re.compile(
    r"^(?P<function>show_signal_msg|show_signal|do_trap|do_general_protection|"
    r"__bad_area_nosemaphore): (?P<count>\d+) callbacks suppressed"
)
_SIGNALS = {
    "segfault": "SIGSEGV",
    "general protection fault": "SIGSEGV",
    "invalid opcode": "SIGILL",
    "divide error": "SIGFPE",
    "int3": "SIGTRAP",
    "overflow": "SIGSEGV",
    "bounds": "SIGSEGV",
    "stack segment": "SIGBUS",
    "alignment check": "SIGBUS",
}


class UserFault(BaseModel):
    """A process killed for a fault the CPU raised, as the kernel logged it."""

    kind: str = Field(description="segfault, general protection fault, invalid opcode, ...")
    signal: str | None = Field(default=None, description="The signal it got, when known.")
    pid: int = Field(description="Host PID.")
    name: str
    address: str | None = Field(default=None, description="Faulting address (segfaults).")
    ip: str
    error: int = Field(description="The fault's error code (x86 page-fault bits for segfaults).")
    error_text: str = Field(description="The error code as the log prints it (hex digits).")
    where: str | None = Field(default=None, description="The file the ip was in, if any.")
    monotonic_s: float | None = None
    time: datetime | None = None
    previous_boot: bool = False
    evidence: EvidenceRef


def find_faults(lines: Sequence[KernelLine], section: str) -> list[UserFault]:
    """Every user-space fault in ``lines``.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 91.5] python3[48213]: segfault at 0 ip 00007f3a9c2b1d40 sp 00007ffd6e1c2a18 "
    ...     "error 4 in libc.so.6[7f3a9c200000+195000]\\n"
    ...     "[ 92.0] traps: ray::IDLE[15760] general protection fault ip:555d112101dc "
    ...     "sp:7fff27f6d160 error:0 in crash[11dc,555d11210000+1000]\\n"
    ... )
    >>> for f in find_faults(read_lines(log, 1, Clock()), "kernel_log"):
    ...     print(f.kind, f.signal, f.pid, f.name, f.where, f.error)
    segfault SIGSEGV 48213 python3 libc.so.6 4
    general protection fault SIGSEGV 15760 ray::IDLE crash 0
    """
    faults = []
    for line in lines:
        message = line.message
        if "segfault at " in message:
            match = _SEGFAULT.match(message)
            kind = "segfault"
        elif "] general protection " in message or "] trap " in message:
            match = _TRAP.match(message)
            kind = match.group("kind").removeprefix("trap ") if match else ""
            if kind == "general protection":
                kind = "general protection fault"
        else:
            continue
        if match is None:
            continue
        faults.append(
            UserFault(
                kind=kind,
                signal=_SIGNALS.get(kind),
                pid=int(match.group("pid")),
                name=match.group("name"),
                address=match.groupdict().get("address"),
                ip=match.group("ip"),
                error=int(match.group("error"), 16),
                error_text=match.group("error"),
                where=match.group("where"),
                monotonic_s=line.monotonic_s,
                time=line.time,
                previous_boot=line.previous_boot,
                evidence=line.evidence(section),
            )
        )
    return faults


def page_fault_words(error: int) -> str:
    """The x86 page-fault error bits of a segfault, in words.

    >>> page_fault_words(4)
    'user-mode read of an unmapped address'
    >>> page_fault_words(0x15)
    'user-mode instruction fetch from a protected address'
    """
    mode = "user-mode" if error & 4 else "kernel-mode"
    access = "instruction fetch from" if error & 16 else "write to" if error & 2 else "read of"
    target = "a protected address" if error & 1 else "an unmapped address"
    return f"{mode} {access} {target}"


def suppressed_faults(lines: Sequence[KernelLine]) -> int:
    """How many fault messages the kernel's rate limit dropped.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 9.0] show_signal_msg: 38 callbacks suppressed\\n"
    ...     "[ 9.1] do_trap: 2 callbacks suppressed\\n"
    ... )
    >>> suppressed_faults(read_lines(log, 1, Clock()))
    40
    """
    total = 0
    for line in lines:
        if "callbacks suppressed" in line.message:
            match = _SUPPRESSED.match(line.message)
            total += int(match.group("count")) if match else 0
    return total
