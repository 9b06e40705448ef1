"""What the NVIDIA driver says about a GPU outside its Xid lines: a GPU lost from the bus,
a GPU that never initialised, and the driver's own rate limit on its error lines.

Shapes (values invented; ``nv.c`` of the open kernel modules, and public reports)::

    NVRM: The NVIDIA GPU 0000:b3:00.0
    NVRM: (PCI ID: 10de:2330) installed in this system has
    NVRM: fallen off the bus and is not responding to commands.
    NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.
    NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x62:0x40:2404)
    NVRM: GPU 0000:41:00.0: rm_init_adapter failed, device minor number 1
    NVRM: RmInitAdapter failed! (0x26:0xffff:1290)                            (older drivers)
    NVRM: rm_init_adapter failed for device bearing minor number 0           (older drivers)
    NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:61:00 (printing 1 of every 30).

The first message is one record of three lines: in ``dmesg`` the last two have no stamp
of their own, in syslog each gets one. A lost GPU is what Xid 79 reports; the driver often
prints only these lines (at probe, or when it finds the GPU gone), with no Xid at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import EXCERPT_CHARS, KernelLine
from forensics.kernel.xid import bus_id

GpuEventKind = Literal["fallen_off_bus", "init_failed", "rate_limited"]

_PCI = re.compile(r"(?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)")
_THE_GPU = re.compile(
    r"NVRM: The NVIDIA GPU (?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
)
_INIT_CODE = re.compile(r"RmInitAdapter failed! \((?P<code>0x[0-9a-fA-F]+:0x[0-9a-fA-F]+:\d+)\)")
_EVERY = re.compile(r"printing 1 of every (?P<every>\d+)")
_INIT_WORDS = ("RmInitAdapter failed", "rm_init_adapter failed", "could not be initialized")
# The three lines of the fallen-off-the-bus record follow each other.
RECORD_LINES = 3


class GpuDriverEvent(BaseModel):
    kind: GpuEventKind
    bus_id: str | None = Field(
        default=None, description="nvidia-smi form, e.g. 00000000:B3:00.0; None: not printed."
    )
    code: str | None = Field(default=None, description="RmInitAdapter's (0x62:0x40:2404).")
    every: int | None = Field(default=None, description="Rate limit: 1 line of every N.")
    message: str
    monotonic_s: float | None = None
    time: datetime | None = None
    previous_boot: bool = False
    evidence: list[EvidenceRef] = Field(default_factory=list)


def find_gpu_driver_events(lines: Sequence[KernelLine], section: str) -> list[GpuDriverEvent]:
    """Every lost GPU, failed initialisation and rate limit the driver printed.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 1843.3] NVRM: The NVIDIA GPU 0000:b3:00.0\\n"
    ...     "          NVRM: (PCI ID: 10de:2330) installed in this system has\\n"
    ...     "          NVRM: fallen off the bus and is not responding to commands.\\n"
    ...     "[ 1900.0] NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x62:0x40:2404)\\n"
    ...     "[ 1950.0] NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:61:00 "
    ...     "(printing 1 of every 30).  The GPU likely needs to be reset.\\n"
    ... )
    >>> for e in find_gpu_driver_events(read_lines(log, 1, Clock()), "k"):
    ...     print(e.kind, e.bus_id, e.code, e.every, [r.first_line for r in e.evidence])
    fallen_off_bus 00000000:B3:00.0 None None [1, 3]
    init_failed 00000000:41:00.0 0x62:0x40:2404 None [4]
    rate_limited 00000000:61:00.0 None 30 [5]
    """
    events: list[GpuDriverEvent] = []
    announced: tuple[int, str, EvidenceRef] | None = None
    for index, line in enumerate(lines):
        message = line.message
        if "NVRM" not in message or "NVRM: Xid" in message:
            continue
        if (the_gpu := _THE_GPU.search(message)) is not None:
            announced = (index, the_gpu.group("pci"), line.evidence(section))
        if "fallen off the bus" in message:
            evidence = [line.evidence(section)]
            pci = _pci(message)
            if pci is None and announced is not None and index - announced[0] < RECORD_LINES:
                pci = announced[1]
                if announced[2].first_line != line.number:
                    evidence.insert(0, announced[2])
            events.append(_event("fallen_off_bus", pci, line, evidence))
        elif any(words in message for words in _INIT_WORDS):
            event = _event("init_failed", _pci(message), line, [line.evidence(section)])
            code = _INIT_CODE.search(message)
            event.code = code.group("code") if code else None
            events.append(event)
        elif "Rate limiting" in message:
            event = _event("rate_limited", _pci(message), line, [line.evidence(section)])
            every = _EVERY.search(message)
            event.every = int(every.group("every")) if every else None
            events.append(event)
    return events


def _pci(message: str) -> str | None:
    match = _PCI.search(message.partition("NVRM: ")[2])
    return match.group("pci") if match else None


def _event(
    kind: GpuEventKind, pci: str | None, line: KernelLine, evidence: list[EvidenceRef]
) -> GpuDriverEvent:
    return GpuDriverEvent(
        kind=kind,
        bus_id=bus_id(pci) if pci else None,
        message=line.message[:EXCERPT_CHARS],
        monotonic_s=line.monotonic_s,
        time=line.time,
        previous_boot=line.previous_boot,
        evidence=evidence,
    )
