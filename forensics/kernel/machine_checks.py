"""Hardware errors the kernel reported: machine checks (CPU, memory) and EDAC memory errors.

Shapes seen in logs (Intel, AMD and EDAC decoders)::

    mce: [Hardware Error]: Machine check events logged
    mce: [Hardware Error]: CPU 2: Machine Check: 0 Bank 3: cc5eb2c000100135
    [Hardware Error]: Corrected error, no action required.
    [Hardware Error]: Deferred error, no action required.
    EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 ...
    EDAC MC0: 1 UE memory read error on ...

Boot lines such as ``mce: CPU0: Thermal monitoring enabled (TM1)`` are not errors. APEI
records about a PCIe device are PCIe AER errors (``pcie_aer.py``), not machine checks.

Corrected (CE) errors are a warning: the hardware fixed them, but a rising count predicts
failure. Uncorrected ones (UE, "Uncorrected", "Fatal", "Processor context corrupt") may
have corrupted data or killed processes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from datetime import datetime

from pydantic import BaseModel

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import EXCERPT_CHARS, KernelLine

_HARDWARE = re.compile(r"\[Hardware Error\]|Machine check|^EDAC MC\d+: \d+ [CU]E ")
_UNCORRECTED = re.compile(
    r"Uncorrected|uncorrectable|Fatal|fatal|context corrupt|^EDAC MC\d+: \d+ UE |"
    r"MCi_STATUS\[[^]]*\bUE\b"
)
_CORRECTED = re.compile(r"Corrected error|^EDAC MC\d+: \d+ CE |\bCE\b")


class MachineCheck(BaseModel):
    uncorrected: bool | None = None
    message: str
    monotonic_s: float | None = None
    time: datetime | None = None
    previous_boot: bool = False
    evidence: EvidenceRef


def find_machine_checks(
    lines: Sequence[KernelLine], section: str, pcie_lines: Set[int] = frozenset()
) -> list[MachineCheck]:
    """Every hardware-error line in ``lines``; ``uncorrected`` is None when the line says
    neither. ``pcie_lines``: section lines of APEI records about PCIe devices, left out.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 10.0] mce: [Hardware Error]: Machine check events logged\\n"
    ...     "[ 10.1] [Hardware Error]: Corrected error, no action required.\\n"
    ...     "[ 11.0] EDAC MC0: 1 UE memory read error on DIMM#0\\n"
    ... )
    >>> [c.uncorrected for c in find_machine_checks(read_lines(log, 1, Clock()), "k")]
    [None, False, True]
    """
    checks = []
    for line in lines:
        message = line.message
        if line.number in pcie_lines or not _HARDWARE.search(message):
            continue
        uncorrected = (
            True if _UNCORRECTED.search(message) else False if _CORRECTED.search(message) else None
        )
        checks.append(
            MachineCheck(
                uncorrected=uncorrected,
                message=message[:EXCERPT_CHARS],
                monotonic_s=line.monotonic_s,
                time=line.time,
                previous_boot=line.previous_boot,
                evidence=line.evidence(section),
            )
        )
    return checks
