"""PCIe Advanced Error Reporting: a device on the PCIe bus reported a link or transaction
error. Not a CPU or memory error: the advice is about the device (its slot, riser, cable,
firmware), named by its bus id.

How kernels word it (``drivers/pci/pcie/aer.c`` and its 3.x ``aerdrv_errprint.c``)::

    pcieport 0000:00:03.0: AER: Corrected error received: id=0018                  (3.x, 4.x)
    pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=0018(R...
    pcieport 0000:5d:00.0: AER: Corrected error received: 0000:5e:00.0             (4.19+)
    nvme 0000:5e:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
    pcieport 0000:16:01.0: AER: Uncorrectable (Non-Fatal) error message received from 0000:17:00.0
    nvidia 0000:17:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transacti...

and, when the firmware handles AER first, as an APEI record::

    {1}[Hardware Error]: event severity: corrected
    {1}[Hardware Error]:   section_type: PCIe error
    {1}[Hardware Error]:   device_id: 0000:b1:00.0

The ``id=`` of old kernels is the requester id (bus << 8 | device << 3 | function).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef
from forensics.kernel.lines import EXCERPT_CHARS, KernelLine

AerSeverity = Literal["corrected", "uncorrected_nonfatal", "uncorrected_fatal", "unknown"]

_BUS = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_PREFIX = re.compile(rf"^(?P<driver>\S+) (?P<device>{_BUS}): (?:AER: )?")
_RECEIVED = re.compile(
    rf"AER: (?:Multiple )?(?P<severity>[A-Za-z]+(?: \((?:Non-)?Fatal\))?) error "
    rf"(?:message )?received(?::| from) (?:(?P<device>{_BUS})|id=(?P<id>[0-9a-fA-F]{{4}}))"
)
_BUS_ERROR = re.compile(
    r"PCIe Bus Error: severity=(?P<severity>[A-Za-z]+(?: \((?:Non-)?Fatal\))?), "
    r"type=(?P<type>[^,]+)"
)
_GHES = re.compile(r"^\{(?P<record>\d+)\}\[Hardware Error\]: ")
_GHES_DEVICE = re.compile(rf"^device_id: (?P<device>{_BUS})\s*$")
_GHES_SEVERITY = re.compile(r"^(?:event severity|Error \d+, type): (?P<severity>\w+)")
_SEVERITIES: dict[str, AerSeverity] = {
    "corrected": "corrected",
    "correctable": "corrected",
    "uncorrected (non-fatal)": "uncorrected_nonfatal",
    "uncorrectable (non-fatal)": "uncorrected_nonfatal",
    "recoverable": "uncorrected_nonfatal",
    "uncorrected (fatal)": "uncorrected_fatal",
    "uncorrectable (fatal)": "uncorrected_fatal",
    "fatal": "uncorrected_fatal",
}
# A root port's "received" line and the device's "PCIe Bus Error" line are one error when
# they follow each other this closely.
SAME_ERROR_LINES = 3


class PcieError(BaseModel):
    """One PCIe AER error report."""

    device: str = Field(description="The device that had the error, e.g. 0000:5e:00.0.")
    driver: str | None = Field(default=None, description="Its driver, e.g. nvme, nvidia.")
    reporter: str | None = Field(default=None, description="The root port that reported it.")
    severity: AerSeverity
    error_type: str | None = Field(
        default=None, description="Physical Layer, Data Link Layer or Transaction Layer."
    )
    message: str
    monotonic_s: float | None = None
    time: datetime | None = None
    previous_boot: bool = False
    evidence: list[EvidenceRef] = Field(default_factory=list)


class PcieScan(BaseModel):
    errors: list[PcieError] = Field(default_factory=list)
    hardware_error_lines: set[int] = Field(
        default_factory=set,
        description="Section lines of APEI records about PCIe, not machine checks.",
    )


def find_pcie_errors(lines: Sequence[KernelLine], section: str) -> PcieScan:
    """Every PCIe AER error in ``lines``, one per report.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 7.0] pcieport 0000:5d:00.0: AER: Corrected error received: 0000:5e:00.0\\n"
    ...     "[ 7.0] nvme 0000:5e:00.0: AER: PCIe Bus Error: severity=Corrected, "
    ...     "type=Physical Layer, (Receiver ID)\\n"
    ...     "[ 9.0] pcieport 0000:00:03.0: AER: Corrected error received: id=0018\\n"
    ... )
    >>> scan = find_pcie_errors(read_lines(log, 1, Clock()), "k")
    >>> [(e.device, e.driver, e.reporter, e.severity, e.error_type) for e in scan.errors]
    [('0000:5e:00.0', 'nvme', '0000:5d:00.0', 'corrected', 'Physical Layer'), \
('0000:00:03.0', 'pcieport', '0000:00:03.0', 'corrected', None)]
    """
    scan = PcieScan()
    last: tuple[int, PcieError] | None = None
    ghes: dict[str, _Record] = {}
    for index, line in enumerate(lines):
        message = line.message
        if "[Hardware Error]" in message:
            _read_ghes(scan, ghes, line, section)
            continue
        if "AER: " not in message and "PCIe Bus Error" not in message:
            continue
        prefix = _PREFIX.match(message)
        received = _RECEIVED.search(message)
        bus_error = _BUS_ERROR.search(message) if received is None else None
        if received is None and bus_error is None:
            continue
        if bus_error is not None and last is not None and index - last[0] <= SAME_ERROR_LINES:
            earlier = last[1]
            if prefix is None or earlier.device in (
                prefix.group("device").lower(),
                earlier.reporter,
            ):
                _merge(earlier, prefix, bus_error, line.evidence(section))
                last = None
                continue
        error = _error(prefix, received, bus_error, line, section)
        if error is not None:
            scan.errors.append(error)
            last = (index, error) if received is not None else None
    return scan


def _error(
    prefix: re.Match[str] | None,
    received: re.Match[str] | None,
    bus_error: re.Match[str] | None,
    line: KernelLine,
    section: str,
) -> PcieError | None:
    own = prefix.group("device").lower() if prefix else None
    device = own
    said = received or bus_error
    words = said.group("severity") if said is not None else ""
    if received is not None:
        device = (received.group("device") or "").lower() or _from_id(received.group("id"), own)
    if device is None:
        return None
    return PcieError(
        device=device,
        driver=prefix.group("driver") if prefix and device == own else None,
        reporter=own if received is not None else None,
        severity=_SEVERITIES.get(words.lower(), "unknown"),
        error_type=bus_error.group("type").strip() if bus_error else None,
        message=line.message[:EXCERPT_CHARS],
        monotonic_s=line.monotonic_s,
        time=line.time,
        previous_boot=line.previous_boot,
        evidence=[line.evidence(section)],
    )


def _merge(
    error: PcieError, prefix: re.Match[str] | None, bus_error: re.Match[str], ref: EvidenceRef
) -> None:
    if prefix is not None:
        error.device = prefix.group("device").lower()
        error.driver = prefix.group("driver")
    error.error_type = bus_error.group("type").strip()
    severity = _SEVERITIES.get(bus_error.group("severity").lower())
    if severity is not None:
        error.severity = severity
    error.evidence.append(ref)


def _from_id(requester: str | None, reporter: str | None) -> str | None:
    """``id=0018`` from root port ``0000:00:03.0``: bus 00, device 03, function 0."""
    if requester is None:
        return reporter
    value = int(requester, 16)
    domain = reporter.split(":", 1)[0] if reporter else "0000"
    return f"{domain}:{value >> 8:02x}:{(value >> 3) & 0x1F:02x}.{value & 7:x}"


@dataclass
class _Record:
    """The lines of one APEI record ``{N}`` so far (the newest ``RECORD_LINES``)."""

    lines: list[KernelLine] = field(default_factory=list)
    pcie: bool = False
    severity: AerSeverity = "unknown"


RECORD_LINES = 16


def _read_ghes(scan: PcieScan, records: dict[str, _Record], line: KernelLine, section: str) -> None:
    """APEI records: a record about a PCIe error ends with the device's bus id."""
    head = _GHES.match(line.message)
    if head is None:
        return
    number = head.group("record")
    body = line.message[head.end() :].strip()
    if body.startswith("Hardware error from APEI") or number not in records:
        records[number] = _Record()
    record = records[number]
    record.lines = [*record.lines[-(RECORD_LINES - 1) :], line]
    if (severity := _GHES_SEVERITY.match(body)) is not None and record.severity == "unknown":
        record.severity = _SEVERITIES.get(severity.group("severity").lower(), "unknown")
    if body == "section_type: PCIe error":
        record.pcie = True
        scan.hardware_error_lines.update(kept.number for kept in record.lines)
    elif record.pcie:
        scan.hardware_error_lines.add(line.number)
        if (device := _GHES_DEVICE.match(body)) is not None:
            scan.errors.append(
                PcieError(
                    device=device.group("device").lower(),
                    severity=record.severity,
                    message=line.message[:EXCERPT_CHARS],
                    monotonic_s=line.monotonic_s,
                    time=line.time,
                    previous_boot=line.previous_boot,
                    evidence=[kept.evidence(section) for kept in record.lines[-8:]],
                )
            )
