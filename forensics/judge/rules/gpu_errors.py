"""What went wrong with the GPUs? The driver's Xid errors and nvidia-smi's failures, read
together.

- ``gpu.xid``: one finding per GPU and Xid code in the kernel log; meaning, owner and
  severity come from ``forensics/kernel/xid.py``, the one place that decides what a code means.
  When nvidia-smi answered, the GPU is named as it names it (index, model, UUID), matched
  by PCI bus id; a bus id nvidia-smi no longer lists is said.
- ``gpu.smi_failed``: nvidia-smi failed (hung, GPU lost, no driver, ...). When the GPU is
  lost or unreachable and the kernel log holds the Xid that explains it (79: fallen off the
  bus; 119, 120: GSP firmware), it cites those lines and points at ``gpu.xid``.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from forensics.core.evidence import cite
from forensics.core.facts import CrossRule, Facts
from forensics.core.models import Finding, Severity
from forensics.core.probe import RuleContext
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
    log, gpu = facts.of(KernelLogFacts), facts.of(GpuFacts)
    xids = log.xids if log is not None else []
    findings = _xid_findings(xids, gpu)
    if gpu is not None and gpu.failure is not None:
        findings.append(_smi_failed(gpu, context, xids))
    return findings


def _xid_findings(xids: list[XidEvent], smi: GpuFacts | None) -> list[Finding]:
    groups: dict[tuple[str, int], list[XidEvent]] = defaultdict(list)
    for xid in xids:
        groups[(xid.bus_id, xid.code)].append(xid)
    listed = {bus_id(gpu.bus_id): gpu for gpu in smi.gpus if gpu.bus_id} if smi else {}
    findings = []
    for (bus, code), group in groups.items():
        meaning = describe(code)
        gpu = listed.get(bus)
        uuid = next((x.gpu_uuid for x in group if x.gpu_uuid), gpu.uuid if gpu else None)
        processes = sorted(
            {f"{x.process or '?'} (pid {x.pid})" for x in group if x.pid is not None}
        )
        times = f" {len(group)} times" if len(group) > 1 else ""
        who = f" Processes on it: {', '.join(processes)} (host PIDs)." if processes else ""
        findings.append(
            Finding(
                id="gpu.xid",
                severity=meaning.severity,
                title=f"{_gpu_words(bus, gpu)} reported Xid {code}{times}: {meaning.meaning}",
                explanation=(
                    f"The NVIDIA driver reported Xid {code} ({meaning.name}: {meaning.meaning})"
                    f" on GPU {bus}{times}, first{_at(group[0].time)}. It usually points at "
                    f"{meaning.owner}.{who}{_identity_words(bus, uuid, gpu, smi)} Last detail: "
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
                    "count": len(group),
                },
                evidence=[x.evidence for x in group[:EVIDENCE_LINES_MAX]],
            )
        )
    return findings


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


def _smi_failed(smi: GpuFacts, context: RuleContext, xids: list[XidEvent]) -> Finding:
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
