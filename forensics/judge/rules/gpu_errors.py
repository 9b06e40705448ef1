"""What went wrong with the GPUs? The driver's Xid errors, its other messages about lost or
uninitialised GPUs, NVSwitch SXids, and nvidia-smi's failures, read together.

- ``gpu.xid``: one finding per GPU and Xid code in the kernel log; meaning, owner
  (application, driver, hardware, thermal_power, follow_up) and NVIDIA's action come from
  ``forensics/kernel/xid.py`` and its catalogue, the one place that decides what a code
  means. When the driver rate-limited its error lines for that GPU (``NVRM: Rate limiting
  …``), the count is a lower bound and says so (``lower_bound``). When nvidia-smi answered,
  the GPU is named as it names it (index, model, UUID), matched by PCI bus id; a bus id
  nvidia-smi no longer lists is said.
- ``gpu.fallen_off_bus`` (critical): the driver says a GPU fell off the bus without an Xid
  79 for it (an Xid 79 finding cites those lines instead); named by bus id.
- ``gpu.init_failed`` (critical): the driver could not initialise a GPU (``RmInitAdapter
  failed``): it is unusable until the host is fixed.
- ``gpu.sxid``: an NVSwitch error, one per switch and code; critical when fatal.
- ``gpu.smi_failed``: nvidia-smi failed (hung, GPU lost, no driver, ...). When the GPU is
  lost or unreachable and the kernel log holds the lines that explain it (Xid 79, a GPU
  fallen off the bus; 119, 120: GSP firmware), it cites them and points at those findings.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from forensics.core.evidence import cite
from forensics.core.facts import CrossRule, Facts
from forensics.core.models import Finding, Severity
from forensics.core.probe import RuleContext
from forensics.kernel.gpu_driver import GpuDriverEvent
from forensics.kernel.sxid import SxidEvent
from forensics.kernel.xid import XidEvent, bus_id, describe
from forensics.probes.gpu import SECTION, Gpu, GpuFacts
from forensics.probes.kernel_log import KernelLogFacts

EVIDENCE_LINES_MAX = 5
# The Xids that explain why nvidia-smi cannot reach a GPU.
EXPLAINING_XIDS: dict[str, frozenset[int]] = {
    "gpu_lost": frozenset({79}),
    "gpu_inaccessible": frozenset({79, 119, 120}),
    "timed_out": frozenset({79, 119, 120}),
}


def gpu_errors(facts: Facts, context: RuleContext) -> list[Finding]:
    log, gpu = facts.of(KernelLogFacts) or KernelLogFacts(), facts.of(GpuFacts)
    xids = log.xids
    events = log.gpu_driver_events
    findings = _xid_findings(xids, events, gpu)
    findings += _lost_findings(xids, events, gpu, log)
    findings += _init_failed_findings(events, log)
    findings += _sxid_findings(log.sxids)
    if gpu is not None and gpu.failure is not None:
        findings.append(_smi_failed(gpu, context, xids, events))
    return findings


def _rate_limits(events: list[GpuDriverEvent]) -> dict[str | None, GpuDriverEvent]:
    """The driver's rate limit per GPU bus id (None: a limit that names no GPU)."""
    return {event.bus_id: event for event in events if event.kind == "rate_limited"}


def _xid_findings(
    xids: list[XidEvent], events: list[GpuDriverEvent], smi: GpuFacts | None
) -> list[Finding]:
    groups: dict[tuple[str, int], list[XidEvent]] = defaultdict(list)
    for xid in xids:
        groups[(xid.bus_id, xid.code)].append(xid)
    listed = {bus_id(gpu.bus_id): gpu for gpu in smi.gpus if gpu.bus_id} if smi else {}
    limits = _rate_limits(events)
    findings = []
    for (bus, code), group in groups.items():
        meaning = describe(code)
        limit = limits.get(bus) or limits.get(None)
        lost = (
            [e for e in events if e.kind == "fallen_off_bus" and e.bus_id == bus]
            if code == 79
            else []
        )
        gpu = listed.get(bus)
        uuid = next((x.gpu_uuid for x in group if x.gpu_uuid), gpu.uuid if gpu else None)
        processes = sorted(
            {f"{x.process or '?'} (pid {x.pid})" for x in group if x.pid is not None}
        )
        at_least = "at least " if limit else ""
        times = f" {at_least}{len(group)} times" if len(group) > 1 or limit else ""
        who = f" Processes on it: {', '.join(processes)} (host PIDs)." if processes else ""
        limited = (
            f" The driver rate-limited its error lines for this GPU (printing 1 of every "
            f"{limit.every or '?'}): every count here is a lower bound."
            if limit
            else ""
        )
        action = (
            f" NVIDIA's catalogue: immediate action {meaning.immediate}"
            + (f", then {meaning.investigatory}" if meaning.investigatory else "")
            + "."
            if meaning.immediate
            else ""
        )
        previous = all(x.previous_boot for x in group)
        before = " (before the last boot)" if previous else ""
        findings.append(
            Finding(
                id="gpu.xid",
                severity=meaning.severity,
                title=(
                    f"{_gpu_words(bus, gpu)} reported Xid {code}{times}{before}: {meaning.meaning}"
                ),
                explanation=(
                    f"The NVIDIA driver reported Xid {code} ({meaning.name}: {meaning.meaning})"
                    f" on GPU {bus}{times}, first{_at(group[0].time)}. It usually points at "
                    f"{meaning.owner_words}.{action}{limited}{who}"
                    f"{_identity_words(bus, uuid, gpu, smi)} Last detail: "
                    f"{group[-1].detail or '(none)'}"
                ),
                next_steps=[
                    meaning.next_step.replace("BUS_ID", bus),
                    f"Check the GPU's state: `nvidia-smi -q -i {bus}`.",
                ],
                subject={
                    "bus_id": bus,
                    "gpu_uuid": uuid,
                    **({"index": gpu.index, "model": gpu.name} if gpu else {}),
                    "code": code,
                    "xid_name": meaning.name,
                    "owner": meaning.owner,
                    "immediate_action": meaning.immediate or None,
                    "count": len(group),
                    "lower_bound": limit is not None,
                    "previous_boot": previous,
                },
                evidence=[x.evidence for x in group[:EVIDENCE_LINES_MAX]]
                + ([limit.evidence[0]] if limit else [])
                + [ref for event in lost[:2] for ref in event.evidence],
            )
        )
    return findings


def _lost_findings(
    xids: list[XidEvent], events: list[GpuDriverEvent], smi: GpuFacts | None, log: KernelLogFacts
) -> list[Finding]:
    """GPUs the driver says fell off the bus, where no Xid 79 says it for them."""
    with_xid = {x.bus_id for x in xids if x.code == 79}
    groups: dict[str, list[GpuDriverEvent]] = defaultdict(list)
    for event in events:
        if event.kind == "fallen_off_bus" and (event.bus_id or "unknown") not in with_xid:
            groups[event.bus_id or "unknown"].append(event)
    listed = {bus_id(gpu.bus_id): gpu for gpu in smi.gpus if gpu.bus_id} if smi else {}
    findings = []
    for bus, group in groups.items():
        described = log.lspci.get(_lspci_form(bus))
        lspci = f" lspci on the host says: {described}." if described else ""
        previous = all(event.previous_boot for event in group)
        before = " (before the last boot)" if previous else ""
        findings.append(
            Finding(
                id="gpu.fallen_off_bus",
                severity=Severity.critical,
                title=f"{_gpu_words(bus, listed.get(bus))} has fallen off the bus{before}",
                explanation=(
                    f"The NVIDIA driver says GPU {bus} has fallen off the bus and is not "
                    f"responding, first{_at(group[0].time)}, {len(group)} time(s): the same "
                    "loss Xid 79 reports, printed here without an Xid (at driver load, or when "
                    "the driver found the GPU gone). Every job on it has failed and the GPU "
                    f"stays lost until the node reboots.{lspci}"
                ),
                next_steps=[
                    "Drain the node and reboot it; if it recurs, open a hardware ticket "
                    "(power, riser, PCIe slot, the GPU itself).",
                    f"`lspci -s {_lspci_form(bus)} -vv` (rev ff: the device is gone from the "
                    "bus); the BMC's event log for power or PCIe faults.",
                ],
                subject={
                    "bus_id": bus,
                    "count": len(group),
                    "lspci": described,
                    "previous_boot": previous,
                },
                evidence=[ref for event in group[:EVIDENCE_LINES_MAX] for ref in event.evidence],
            )
        )
    return findings


def _init_failed_findings(events: list[GpuDriverEvent], log: KernelLogFacts) -> list[Finding]:
    groups: dict[str, list[GpuDriverEvent]] = defaultdict(list)
    for event in events:
        if event.kind == "init_failed":
            groups[event.bus_id or "unknown"].append(event)
    findings = []
    for bus, group in groups.items():
        code = next((event.code for event in group if event.code), None)
        which = f"GPU {bus}" if bus != "unknown" else "a GPU (the driver did not say which)"
        said = f" (RmInitAdapter code {code})" if code else ""
        described = log.lspci.get(_lspci_form(bus))
        lspci = f" lspci on the host says: {described}." if described else ""
        findings.append(
            Finding(
                id="gpu.init_failed",
                severity=Severity.critical,
                title=f"The NVIDIA driver could not initialise {which}{said}",
                explanation=(
                    f"The driver failed to initialise {which}{said}, first{_at(group[0].time)}, "
                    f"{len(group)} line(s). The GPU is unusable (nvidia-smi leaves it out or "
                    "says 'No devices were found') until the host is fixed: a GPU left in a bad "
                    "state (needs a reset or a power cycle), a driver and GSP firmware that do "
                    "not match, too little PCIe address space (BAR) in a VM, or a failing GPU."
                    f"{lspci}"
                ),
                next_steps=[
                    "Read the NVRM lines just before it: `dmesg | grep -B 10 RmInitAdapter`.",
                    "Reset the GPU (`nvidia-smi -r`) or power-cycle the node; check "
                    "`cat /proc/driver/nvidia/version` against the installed packages.",
                ],
                subject={"bus_id": bus, "code": code, "count": len(group), "lspci": described},
                evidence=[ref for event in group[:EVIDENCE_LINES_MAX] for ref in event.evidence],
            )
        )
    return findings


def _sxid_findings(sxids: list[SxidEvent]) -> list[Finding]:
    groups: dict[tuple[str, int], list[SxidEvent]] = defaultdict(list)
    for event in sxids:
        groups[(event.pci, event.code)].append(event)
    findings = []
    for (pci, code), group in groups.items():
        fatal = any(event.fatal for event in group)
        known = any(event.fatal is not None for event in group)
        links = sorted({event.link for event in group if event.link is not None})
        level = "fatal" if fatal else "non-fatal" if known else "unclassified"
        on_links = f" on link(s) {', '.join(map(str, links))}" if links else ""
        findings.append(
            Finding(
                id="gpu.sxid",
                severity=Severity.critical if fatal else Severity.warning,
                title=(
                    f"NVSwitch {group[0].switch} ({pci}) reported {level} SXid {code}"
                    f"{on_links}, {len(group)} time(s)"
                ),
                explanation=(
                    f"The NVSwitch driver reported SXid {code} ({level}) on {group[0].switch} at "
                    f"PCI {pci}{on_links}, first{_at(group[0].time)}: {group[0].detail}. "
                    + (
                        "A fatal SXid takes the switch's links down: the GPUs lose their NVLink "
                        "peers until the switch (usually the node) is reset."
                        if fatal
                        else "A non-fatal SXid was corrected; a rising count points at a "
                        "failing link or switch."
                    )
                ),
                next_steps=[
                    "Read the Fabric Manager log (/var/log/fabricmanager.log) and "
                    "`nvidia-smi nvlink -s`; look the code up in NVIDIA's Fabric Manager guide.",
                    "Fatal: drain the node and reset the fabric (reboot); hardware ticket if "
                    "it recurs.",
                ],
                subject={
                    "bus_id": pci,
                    "switch": group[0].switch,
                    "code": code,
                    "fatal": fatal if known else None,
                    "links": links,
                    "count": len(group),
                },
                evidence=[ref for event in group[:EVIDENCE_LINES_MAX] for ref in event.evidence],
            )
        )
    return findings


def _lspci_form(bus: str) -> str:
    """``00000000:B3:00.0`` as lspci -s takes it and the section names it: ``0000:b3:00.0``."""
    parts = bus.lower().split(":")
    if len(parts) == 3 and len(parts[0]) == 8:
        parts[0] = parts[0][4:]
    return ":".join(parts)


def _gpu_words(bus: str, gpu: Gpu | None) -> str:
    """``GPU 0 (NVIDIA H100 80GB HBM3, 00000000:3B:00.0)``, or the bus id alone."""
    if gpu is None or gpu.index is None:
        return f"GPU {bus}"
    return f"GPU {gpu.index} ({gpu.name}, {bus})" if gpu.name else f"GPU {gpu.index} ({bus})"


def _identity_words(bus: str, uuid: str | None, gpu: Gpu | None, smi: GpuFacts | None) -> str:
    if gpu is not None:
        return f" nvidia-smi lists it as GPU {gpu.index}, {gpu.name or 'model unknown'}, {uuid}."
    named = f" ({uuid})" if uuid else ""
    if smi is not None and smi.gpus:
        return (
            f" nvidia-smi does not list a GPU at {bus}{named} now: it may have fallen off the "
            "bus, or be hidden from this container."
        )
    return f" GPU UUID: {uuid}." if uuid else ""


_FAILURE_WORDS: dict[str, tuple[Severity, str, str, list[str]]] = {
    "timed_out": (
        Severity.critical,
        "hung",
        "nvidia-smi did not answer within {timeout}. It hangs like this when a GPU has fallen "
        "off the bus or the driver is stuck; every CUDA program on the host will hang too.",
        [
            "Check the kernel log for Xid 79 (GPU has fallen off the bus): dmesg -T | grep -i xid",
            "timeout 120 nvidia-smi (by hand, to see whether it ever answers)",
            "Drain the host: a lost GPU usually needs a node reboot",
        ],
    ),
    "gpu_lost": (
        Severity.critical,
        "reports a lost GPU",
        "nvidia-smi says a GPU is lost: it has fallen off the bus (PCIe, power or hardware). "
        "Work on it has failed and will keep failing until the node is rebooted.",
        [
            "Check the kernel log for Xid 79 (GPU has fallen off the bus): dmesg -T | grep -i xid",
            "lspci | grep -i nvidia (rev ff means the device is gone from the bus)",
            "Drain the host and reboot it; if it recurs, open a hardware ticket",
        ],
    ),
    "gpu_inaccessible": (
        Severity.critical,
        "cannot reach a GPU",
        "nvidia-smi cannot get a handle on a GPU. This usually means the GPU dropped off the bus "
        "or the driver lost it.",
        [
            "Check the kernel log for Xid 79 and Xid 119/120: dmesg -T | grep -i xid",
            "lspci | grep -i nvidia (rev ff means the device is gone from the bus)",
        ],
    ),
    "version_mismatch": (
        Severity.critical,
        "finds a driver/library version mismatch",
        "The NVIDIA kernel module and the user-space library have different versions, usually "
        "after a driver upgrade without a reboot. No CUDA program can start.",
        ["cat /proc/driver/nvidia/version; reboot (or reload the nvidia modules) to match"],
    ),
    "driver_not_loaded": (
        Severity.warning,
        "cannot reach the NVIDIA driver",
        "nvidia-smi cannot talk to the NVIDIA driver: the kernel module is not loaded, or this "
        "container was started without GPU access.",
        [
            "ls -l /dev/nvidia* (device nodes present?); lsmod | grep nvidia on the host",
            "For a container: was it started with --gpus / the NVIDIA runtime?",
        ],
    ),
    "no_devices": (
        Severity.warning,
        "sees no GPU",
        "The driver is loaded but no GPU is usable here: no GPU was allocated to this container "
        "or job, or the GPU fell off the bus.",
        ["echo $NVIDIA_VISIBLE_DEVICES $CUDA_VISIBLE_DEVICES; ls -l /dev/nvidia*"],
    ),
    "nvml_unknown_error": (
        Severity.warning,
        "hit an NVML unknown error",
        "NVML failed with 'Unknown Error'. Inside a container this usually means the container "
        "lost access to the GPU devices after the host ran 'systemctl daemon-reload'.",
        ["Restart the container; on the host, see nvidia-container-toolkit issue #48"],
    ),
}


def _smi_failed(
    smi: GpuFacts, context: RuleContext, xids: list[XidEvent], events: list[GpuDriverEvent]
) -> Finding:
    kind = smi.failure or "failed"
    timeout = f"{context.options.gpu_timeout:g} s"
    severity, short, explanation, steps = _FAILURE_WORDS.get(
        kind,
        (
            Severity.warning,
            "failed",
            "nvidia-smi failed; its own words are in the evidence. The GPU state is unknown.",
            ["nvidia-smi (by hand, and read its message); dmesg -T | grep -i -E 'nvrm|xid'"],
        ),
    )
    run = smi.failure_run
    excerpt = smi.failure_message or kind
    evidence = []
    if run is not None:
        evidence.append(cite(SECTION, run.first_line, excerpt, last_line=run.last_line))
    subject: dict[str, object] = {"failure": kind, "message": smi.failure_message}
    explaining = [x for x in xids if x.code in EXPLAINING_XIDS.get(kind, frozenset())]
    explanation = explanation.format(timeout=timeout)
    if explaining:
        first = explaining[0]
        codes = sorted({x.code for x in explaining})
        buses = sorted({x.bus_id for x in explaining})
        explanation += (
            f" The kernel log agrees: the driver reported Xid {', '.join(map(str, codes))} "
            f"({first.meaning.meaning}) on GPU {', '.join(buses)}{_at(first.time)}; see the "
            "gpu.xid finding, and the kernel log lines below."
        )
        steps = [f"Read the gpu.xid finding for GPU {', '.join(buses)}"] + [
            step for step in steps if "grep -i xid" not in step
        ]
        evidence += [x.evidence for x in explaining[:EVIDENCE_LINES_MAX]]
        subject.update({"xid_codes": codes, "xid_bus_ids": buses})
    lost = [e for e in events if e.kind == "fallen_off_bus" and 79 in EXPLAINING_XIDS.get(kind, ())]
    if lost and not explaining:
        buses = sorted({event.bus_id or "unknown" for event in lost})
        explanation += (
            f" The kernel log agrees: the driver says GPU {', '.join(buses)} has fallen off the "
            f"bus{_at(lost[0].time)}; see the gpu.fallen_off_bus finding."
        )
        steps = [f"Read the gpu.fallen_off_bus finding for GPU {', '.join(buses)}"] + [
            step for step in steps if "grep -i xid" not in step
        ]
        evidence += [ref for event in lost[:EVIDENCE_LINES_MAX] for ref in event.evidence]
        subject["lost_bus_ids"] = buses
    return Finding(
        id="gpu.smi_failed",
        severity=severity,
        title=f"nvidia-smi {short}: {excerpt[:120]}",
        explanation=explanation,
        next_steps=steps,
        subject=subject,
        evidence=evidence,
    )


def _at(moment: datetime | None) -> str:
    return f" at {moment:%Y-%m-%d %H:%M:%S} UTC" if moment else ""


RULES: tuple[CrossRule, ...] = (gpu_errors,)
