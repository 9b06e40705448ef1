"""NVIDIA Xid errors: the one place that reads an ``NVRM: Xid`` line and says what it means.

The driver (open-gpu-kernel-modules ``kernel_rc.c``) prints::

    NVRM: Xid (PCI:0000:3b:00): 31, pid=40112, name=python3, Ch 00000018, intr 00000000. ...
    NVRM: Xid (PCI:0000:41:00 GPU-I:03): 94, pid=8231, name=vllm, Contained: CE User Channel ...
    NVRM: Xid (PCI:0000:b1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:1c:00): 63, pid=2206, Row Remapper: New row marked for remapping, ...
    NVRM: Xid (0000:02:00): 31, Ch 0000000c, engmask 00000101, intr 10000000   (old drivers)

and once per GPU ``NVRM: GPU at PCI:0000:3b:00: GPU-5a1c0e7e-...``. The PCI id has no
function number; ``bus_id`` gives the form nvidia-smi prints (``00000000:3B:00.0``). The
``pid=`` is a host PID. Meanings, owners and actions come from NVIDIA's Xid catalogue
(``xid_catalog.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast

from pydantic import BaseModel, Field

from forensics.core.models import EvidenceRef, Severity
from forensics.core.numbers import parse_int
from forensics.kernel.lines import KernelLine
from forensics.kernel.xid_catalog import XID_CATALOG

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}(?:\.\d)?)"
    r"(?: GPU-I:(?P<gi>\d+))?(?: GPU-CI:(?P<ci>\d+))?\): (?P<code>\d+)"
    r"(?:, pid=(?P<pid>[^,]*))?(?:, name=(?P<name>[^,]*))?(?:,\s*(?P<detail>.*))?$"
)
_GPU_AT = re.compile(
    r"NVRM: GPU at PCI:(?P<pci>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}): "
    r"(?P<uuid>GPU-[0-9a-fA-F-]+)"
)


Owner = Literal[
    "application", "driver", "hardware", "thermal_power", "follow_up", "informational", "unknown"
]

OWNER_WORDS: dict[str, str] = {
    "application": "the application (a bug or an illegal memory access in the CUDA job)",
    "driver": "the driver or the GPU's firmware",
    "hardware": "the GPU hardware or its board (memory, NVLink, PCIe, power delivery)",
    "thermal_power": "the board's power or cooling",
    "follow_up": "the Xid it follows up on (read the one before it)",
    "informational": "nothing: it is an information or test message",
    "unknown": "unknown: NVIDIA marks this code unused on current GPUs",
}

# What to do, per NVIDIA's resolution bucket (immediate action), in this tool's words.
_BUCKET_STEPS: dict[str, str] = {
    "RESTART_APP": (
        "Restart the application that ran on this GPU (the pid/name above); if the same Xid "
        "follows different jobs on this GPU, suspect the GPU."
    ),
    "RESET_GPU": (
        "Drain the GPU and reset it (`nvidia-smi -r -i BUS_ID`), or reboot the node; if it "
        "recurs, open a hardware ticket with this evidence."
    ),
    "RESTART_BM": (
        "The GPU is gone until the node reboots: drain the node and reboot it; check power "
        "and PCIe (`lspci -s BUS_ID -vv`, BMC logs); hardware ticket if it recurs."
    ),
    "RESTART_VM": "Restart the VM the GPU is passed through to.",
    "IGNORE": "Nothing to do for this one alone; act if it repeats or other Xids follow.",
    "CONTACT_SUPPORT": (
        "Collect `nvidia-bug-report.sh` on the host and send it to NVIDIA or the provider."
    ),
    "CHECK_MECHANICALS": "Check the board's power cables and seating; reseat or replace.",
    "UPDATE_SWFW": "Update the driver and GPU firmware to a matching, supported pair.",
    "CHECK_UVM": "Check the nvidia-uvm module and the application's unified memory use.",
    "WORKFLOW_XID_48": (
        "Check `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`; reset the GPU to apply "
        "pending retirements or remaps; RMA if it recurs."
    ),
    "WORKFLOW_XID_45": "Read the Xid before this one on the same GPU: it is the cause.",
    "WORKFLOW_NVLINK_ERR": (
        "Check `nvidia-smi nvlink -e -i BUS_ID` and `nvidia-smi -q`; reset the GPUs; hardware "
        "ticket if it recurs."
    ),
    "WORKFLOW_NVLINK5_ERR": (
        "Check `nvidia-smi nvlink -e -i BUS_ID`; reset the GPU if the link is down; hardware "
        "ticket if it recurs."
    ),
    "XID_154": "Read the recovery action in the line (reset, reboot, drain) and do it.",
}
_CRITICAL_BUCKETS = ("RESET_GPU", "RESTART_BM", "RESTART_VM", "WORKFLOW_XID_48", "WORKFLOW_NVLINK")


@dataclass(frozen=True)
class XidCode:
    """What an Xid code means, who usually owns it, how bad it is, and what to do."""

    name: str
    meaning: str
    owner: Owner
    severity: Severity
    next_step: str
    immediate: str = ""
    """NVIDIA's immediate resolution bucket (RESTART_APP, RESET_GPU, ...)."""
    investigatory: str = ""

    @property
    def owner_words(self) -> str:
        return OWNER_WORDS[self.owner]


def describe(code: int) -> XidCode:
    """The meaning of ``code`` from NVIDIA's catalogue (``xid_catalog.py``).

    >>> describe(79).meaning, describe(79).severity.value, describe(79).owner
    ('GPU has fallen off the bus', 'critical', 'hardware')
    >>> describe(32).meaning, describe(32).owner, describe(32).immediate
    ('Invalid or corrupted push buffer stream', 'application', 'RESTART_APP')
    >>> describe(999).name, describe(999).owner
    ('UNKNOWN', 'unknown')
    """
    row = XID_CATALOG.get(code)
    if row is None:
        return XidCode(
            "UNKNOWN",
            f"Xid {code} (not in NVIDIA's catalogue as this tool knows it, codes 1-172)",
            "unknown",
            Severity.warning,
            f"Look up Xid {code} in NVIDIA's catalog: https://docs.nvidia.com/deploy/xid-errors/",
        )
    name, meaning, immediate, investigatory, owner = row
    severity = (
        Severity.critical
        if immediate.startswith(_CRITICAL_BUCKETS)
        else Severity.info
        if owner == "informational"
        else Severity.warning
    )
    step = _BUCKET_STEPS.get(immediate.split(" ")[0], _BUCKET_STEPS["CONTACT_SUPPORT"])
    if owner == "unknown":
        step = f"NVIDIA marks Xid {code} unused on current GPUs: {_BUCKET_STEPS['CONTACT_SUPPORT']}"
    return XidCode(
        name,
        meaning,
        cast(Owner, owner),
        severity,
        step,
        immediate=immediate,
        investigatory=investigatory,
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
    previous_boot: bool = False
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
                previous_boot=line.previous_boot,
                evidence=line.evidence(section),
            )
        )
    return events


def _name(text: str | None) -> str | None:
    name = (text or "").strip()
    return None if not name or name == "<unknown>" else name
