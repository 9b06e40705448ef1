"""NVSwitch errors (SXid): the switch driver's counterpart of the GPU's Xid, on HGX/DGX
systems with NVSwitch (Hopper and earlier).

The ``nvidia-nvswitch`` driver prints (NVIDIA Fabric Manager user guide; values invented)::

    nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted ...
    nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Severity 0 Engine instance 32 Sub-eng...
    nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Data {0x00000000, 0x00000000, ...}
    nvidia-nvswitch0: SXid (PCI:0000:88:00.0): 20034, Fatal, Link 30 LTSSM Fault Up

One error is the line that says ``Fatal``/``Non-fatal`` and the detail lines of the same
switch and code after it. A fatal SXid takes the switch's links down: the GPUs behind it
lose NVLink peers until the switch (and usually the node) is reset.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import EXCERPT_CHARS, KernelLine

_SXID = re.compile(
    r"(?P<switch>nvidia-nvswitch\d+): SXid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): (?P<code>\d+), "
    r"(?P<rest>.*)$"
)
_LINK = re.compile(r"\bLink (?P<link>\d+)\b")
DETAIL_EVIDENCE_MAX = 3


class SxidEvent(BaseModel):
    switch: str = Field(description="The driver's name for the switch, e.g. nvidia-nvswitch3.")
    pci: str = Field(description="The switch's PCI address as printed, e.g. 0000:05:00.0.")
    code: int
    fatal: bool | None = Field(default=None, description="None: the line does not say.")
    link: int | None = None
    detail: str
    monotonic_s: float | None = None
    time: datetime | None = None
    previous_boot: bool = False
    evidence: list[EvidenceRef] = Field(default_factory=list)


def find_sxids(lines: Sequence[KernelLine], section: str) -> list[SxidEvent]:
    """Every SXid error in ``lines``, its detail lines folded in.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 8.0] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 "
    ...     "egress non-posted PRIV error (First)\\n"
    ...     "[ 8.0] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Severity 0 Engine "
    ...     "instance 32 Sub-engine instance 00\\n"
    ...     "[ 9.0] nvidia-nvswitch0: SXid (PCI:0000:88:00.0): 20034, Fatal, Link 30 "
    ...     "LTSSM Fault Up\\n"
    ... )
    >>> [(e.pci, e.code, e.fatal, e.link, len(e.evidence))
    ...  for e in find_sxids(read_lines(log, 1, Clock()), "k")]
    [('0000:05:00.0', 12028, False, 32, 2), ('0000:88:00.0', 20034, True, 30, 1)]
    """
    events: list[SxidEvent] = []
    for line in lines:
        if "SXid (" not in line.message:
            continue
        match = _SXID.search(line.message)
        if match is None:
            continue
        rest = match.group("rest")
        words = rest.split(",", 1)[0].strip().lower()
        fatal = True if words == "fatal" else False if words == "non-fatal" else None
        last = events[-1] if events else None
        same = (
            last is not None
            and last.switch == match.group("switch")
            and last.code == int(match.group("code"))
        )
        if fatal is None and same and last is not None:
            if len(last.evidence) < DETAIL_EVIDENCE_MAX:
                last.evidence.append(line.evidence(section))
            continue
        link = _LINK.search(rest)
        events.append(
            SxidEvent(
                switch=match.group("switch"),
                pci=match.group("pci").lower(),
                code=int(match.group("code")),
                fatal=fatal,
                link=int(link.group("link")) if link else None,
                detail=rest[:EXCERPT_CHARS],
                monotonic_s=line.monotonic_s,
                time=line.time,
                previous_boot=line.previous_boot,
                evidence=[line.evidence(section)],
            )
        )
    return events
