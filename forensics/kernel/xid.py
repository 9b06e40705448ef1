"""NVIDIA Xid errors: the one place that reads an ``NVRM: Xid`` line and says what it means.

The driver (open-gpu-kernel-modules ``kernel_rc.c``) prints::

    NVRM: Xid (PCI:0000:3b:00): 31, pid=40112, name=python3, Ch 00000018, intr 00000000. ...
    NVRM: Xid (PCI:0000:41:00 GPU-I:03): 94, pid=8231, name=vllm, Contained: CE User Channel ...
    NVRM: Xid (PCI:0000:b1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:1c:00): 63, pid=2206, Row Remapper: New row marked for remapping, ...
    NVRM: Xid (0000:02:00): 31, Ch 0000000c, engmask 00000101, intr 10000000   (old drivers)

and once per GPU ``NVRM: GPU at PCI:0000:3b:00: GPU-5a1c0e7e-...``. The PCI id has no
function number; ``bus_id`` gives the form nvidia-smi prints (``00000000:3B:00.0``). The
``pid=`` is a host PID. Meanings follow NVIDIA's Xid catalog and ``nverror.h``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef, Severity
from forensics.core.numbers import parse_int
from forensics.kernel.lines import KernelLine

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}(?:\.\d)?)"
    r"(?: GPU-I:(?P<gi>\d+))?(?: GPU-CI:(?P<ci>\d+))?\): (?P<code>\d+)"
    r"(?:, pid=(?P<pid>[^,]*))?(?:, name=(?P<name>[^,]*))?(?:,\s*(?P<detail>.*))?$"
)
_GPU_AT = re.compile(
    r"NVRM: GPU at PCI:(?P<pci>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}): "
    r"(?P<uuid>GPU-[0-9a-fA-F-]+)"
)


@dataclass(frozen=True)
class XidCode:
    """What an Xid code means, who usually owns it, and how bad it is."""

    name: str
    meaning: str
    owner: str
    severity: Severity
    next_step: str


_APPLICATION = "the application (a bug or illegal memory access in the CUDA job)"
_HARDWARE = "the GPU hardware or its board (power, PCIe, memory)"
_FIRMWARE = "the driver or GPU firmware"
_RESET = (
    "Drain the node, then reset the GPU (`nvidia-smi -r -i BUS_ID`) or reboot; if it "
    "recurs, open a hardware ticket with this evidence."
)
_APP_STEP = (
    "Look at the application that ran on this GPU at that time (the pid/name above); "
    "if the same Xid follows different jobs on this GPU, suspect the GPU."
)

XID_CODES: dict[int, XidCode] = {
    13: XidCode("ROBUST_CHANNEL_GR_EXCEPTION", "graphics engine exception", _APPLICATION,
                Severity.warning, _APP_STEP),
    31: XidCode("ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault (MMU fault)",
                _APPLICATION, Severity.warning, _APP_STEP),
    43: XidCode("ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing",
                _APPLICATION, Severity.warning, _APP_STEP),
    45: XidCode("ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
                "preemptive cleanup after an earlier error or a killed process",
                "whatever caused the earlier Xid, or a process killed while using the GPU",
                Severity.warning,
                "Look at the Xid just before this one, and at processes killed at that time "
                "(an OOM kill of a CUDA process leaves Xid 45)."),
    48: XidCode("ROBUST_CHANNEL_GPU_ECC_DBE", "double-bit ECC memory error", _HARDWARE,
                Severity.critical,
                "Check `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`; reset the GPU; "
                "RMA if it recurs."),
    61: XidCode("PMU_BREAKPOINT", "internal micro-controller breakpoint or warning", _FIRMWARE,
                Severity.warning, "Update the driver if it recurs; reset the GPU if it hangs."),
    62: XidCode("PMU_HALT_ERROR", "internal micro-controller halted", _FIRMWARE,
                Severity.critical, _RESET),
    63: XidCode("INFOROM_PAGE_RETIREMENT_EVENT", "ECC page retirement or row remapping recorded",
                _HARDWARE, Severity.warning,
                "Check `nvidia-smi -q -d ROW_REMAPPER`: a pending remap needs a GPU reset."),
    64: XidCode("INFOROM_PAGE_RETIREMENT_FAILURE",
                "ECC page retirement or row remapping failed to record", _HARDWARE,
                Severity.critical, _RESET),
    68: XidCode("ROBUST_CHANNEL_NVDEC0_ERROR", "video decoder exception", _APPLICATION,
                Severity.warning, _APP_STEP),
    74: XidCode("NVLINK_ERROR", "NVLink error", "the NVLink interconnect or the GPU",
                Severity.critical,
                "Check `nvidia-smi nvlink -e` and `nvidia-smi -q`; reset the GPUs; hardware "
                "ticket if it recurs."),
    79: XidCode("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
                _HARDWARE, Severity.critical,
                "The GPU is gone until the node reboots: drain it, reboot, and check power "
                "and PCIe (`lspci`, BMC logs); hardware ticket if it recurs."),
    92: XidCode("EXCESSIVE_SBE_INTERRUPTS", "high single-bit ECC error rate", _HARDWARE,
                Severity.warning, "Watch `nvidia-smi -q -d ECC`; plan a replacement."),
    94: XidCode("ROBUST_CHANNEL_CONTAINED_ERROR",
                "contained ECC error: only the application that hit it must restart",
                _HARDWARE, Severity.warning,
                "Restart the affected application; check `nvidia-smi -q -d ROW_REMAPPER`."),
    95: XidCode("ROBUST_CHANNEL_UNCONTAINED_ERROR",
                "uncontained ECC error: all work on the GPU is affected", _HARDWARE,
                Severity.critical, _RESET),
    119: XidCode("GSP_RPC_TIMEOUT", "GSP firmware RPC timeout", _FIRMWARE, Severity.critical,
                 _RESET + " Updating the driver often helps."),
    120: XidCode("GSP_ERROR", "GSP firmware error", _FIRMWARE, Severity.critical,
                 _RESET + " Updating the driver often helps."),
    140: XidCode("UNRECOVERABLE_ECC_ERROR_ESCAPE", "unrecovered ECC error", _HARDWARE,
                 Severity.critical, _RESET),
    154: XidCode("GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed",
                 _FIRMWARE, Severity.warning,
                 "Read the action in the line (reset, reboot, drain) and do it."),
}  # fmt: skip


def describe(code: int) -> XidCode:
    """The meaning of ``code``; codes missing from the table are a warning to look up.

    >>> describe(79).meaning, describe(79).severity.value
    ('GPU has fallen off the bus', 'critical')
    >>> describe(999).name
    'UNKNOWN'
    """
    return XID_CODES.get(
        code,
        XidCode(
            "UNKNOWN",
            f"Xid {code} (not in this tool's table)",
            "unknown",
            Severity.warning,
            f"Look up Xid {code} in NVIDIA's catalog: https://docs.nvidia.com/deploy/xid-errors/",
        ),
    )


def bus_id(pci: str) -> str:
    """The PCI id of an Xid line in nvidia-smi's form (8-hex domain, upper case, function).

    >>> bus_id("0000:3b:00"), bus_id("3b:00"), bus_id("00000000:3B:00.0")
    ('00000000:3B:00.0', '00000000:3B:00.0', '00000000:3B:00.0')
    """
    parts = pci.lower().split(":")
    if len(parts) == 2:
        parts.insert(0, "0")
    domain, bus, device = [*parts, "0", "0", "0"][:3]
    device, _, function = device.partition(".")
    try:
        return (
            f"{int(domain, 16):08X}:{int(bus, 16):02X}:{int(device, 16):02X}."
            f"{int(function or '0', 16):X}"
        )
    except ValueError:
        return pci


class XidEvent(BaseModel):
    """One ``NVRM: Xid`` line."""

    code: int
    pci: str = Field(description="As the line prints it, e.g. 0000:3b:00.")
    bus_id: str = Field(description="nvidia-smi form, e.g. 00000000:3B:00.0.")
    gpu_uuid: str | None = Field(default=None, description="From the 'GPU at PCI:' line.")
    gpu_instance: int | None = Field(default=None, description="MIG GPU instance.")
    compute_instance: int | None = Field(default=None, description="MIG compute instance.")
    pid: int | None = Field(default=None, description="Host PID of the channel's process.")
    process: str | None = None
    detail: str = Field(description="The rest of the line, verbatim.")
    monotonic_s: float | None = None
    time: datetime | None = None
    evidence: EvidenceRef

    @property
    def meaning(self) -> XidCode:
        return describe(self.code)


def parse_xid(message: str) -> dict[str, str | None] | None:
    """The fields of one Xid message, or None when it is not one.

    >>> parse_xid("NVRM: Xid (PCI:0000:41:00 GPU-I:03): 94, pid=8231, name=vllm, Contained: "
    ...           "CE User Channel (0x9). RST: No, D-RST: No")["detail"]
    'Contained: CE User Channel (0x9). RST: No, D-RST: No'
    >>> parse_xid("NVRM: Xid (0000:02:00): 31, Ch 0000000c, engmask 00000101")["pid"] is None
    True
    """
    if "NVRM: Xid (" not in message:
        return None
    match = _XID.search(message)
    return match.groupdict() if match else None


def find_xids(lines: Sequence[KernelLine], section: str) -> list[XidEvent]:
    """Every Xid in ``lines``, with the GPU's UUID when the log names it.

    >>> from forensics.kernel.lines import Clock, read_lines
    >>> log = (
    ...     "[ 5.0] NVRM: GPU at PCI:0000:b1:00: GPU-5a1c0e7e-2f44-9d1b-77ab-0c93e1d2a4f0\\n"
    ...     "[ 900.2] NVRM: Xid (PCI:0000:b1:00): 79, pid='<unknown>', name=<unknown>, "
    ...     "GPU has fallen off the bus.\\n"
    ... )
    >>> [(x.code, x.bus_id, x.gpu_uuid[:12], x.pid, x.process, x.detail)
    ...  for x in find_xids(read_lines(log, 1, Clock()), "kernel_log")]
    [(79, '00000000:B1:00.0', 'GPU-5a1c0e7e', None, None, 'GPU has fallen off the bus.')]
    """
    uuids: dict[str, str] = {}
    for line in lines:
        at = _GPU_AT.search(line.message) if "NVRM: GPU at PCI:" in line.message else None
        if at:
            uuids[bus_id(at.group("pci"))] = at.group("uuid")
    events = []
    for line in lines:
        fields = parse_xid(line.message)
        if fields is None:
            continue
        pci = fields["pci"] or ""
        normalized = bus_id(pci)
        events.append(
            XidEvent(
                code=int(fields["code"] or 0),
                pci=pci,
                bus_id=normalized,
                gpu_uuid=uuids.get(normalized),
                gpu_instance=parse_int(fields["gi"], minimum=0),
                compute_instance=parse_int(fields["ci"], minimum=0),
                pid=parse_int((fields["pid"] or "").strip("'\" "), minimum=0),
                process=_name(fields["name"]),
                detail=(fields["detail"] or "").strip(),
                monotonic_s=line.monotonic_s,
                time=line.time,
                evidence=line.evidence(section),
            )
        )
    return events


def _name(text: str | None) -> str | None:
    name = (text or "").strip()
    return None if not name or name == "<unknown>" else name
