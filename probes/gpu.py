"""gpu: what nvidia-smi says about each GPU and who uses it, or why it could not say.

Runs ``nvidia-smi`` CSV queries in one section whose timeout (``--gpu-timeout``) cuts a
hung ``nvidia-smi`` (it hangs when a GPU has fallen off the bus); what finished before the
hang is kept. Each query is announced before it runs and its exit status after, and every
line nvidia-smi printed comes back behind ``|``::

    clock 1764450000
    @ run gpus
    @ exit gpus 0
    |index, uuid, name, pci.bus_id, driver_version, memory.used [MiB], memory.total [MiB], ...
    |0, GPU-5a1c0e7e-2f44-9d1b-77ab-0c93e1d2a4f0, NVIDIA H100 80GB HBM3, 00000000:3B:00.0, ...
    @ run throttle
    ...
    @ run apps
    @ exit apps 0
    |gpu_uuid, pid, process_name, used_gpu_memory [MiB]
    |GPU-5a1c0e7e-2f44-9d1b-77ab-0c93e1d2a4f0, 391822, /usr/local/bin/python3.10, 61022 MiB

A ``@ run`` without its ``@ exit`` is the query that hung. When the main query fails, the
others are not tried: they would fail, or hang, the same way.

Columns are read by their header names, so units (``MiB``) and ``[N/A]``-style values
(``[Not Supported]``, ``[Not Found]``, ``[Insufficient Permissions]``) are all tolerated.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from forensics.core.evidence import cite
from forensics.core.models import CollectOptions, Finding, SectionSpec, Severity
from forensics.core.numbers import parse_float, parse_int
from forensics.core.probe import (
    Captures,
    Probe,
    ProbeFacts,
    RuleContext,
    open_section,
)
from forensics.core.timeline_event import GPU_FAILURE, TimelineEvent
from forensics.remote.host_script import ShellValue, probe_shell

SECTION = "gpu"
MAIN_FIELDS = (
    "index", "uuid", "name", "pci.bus_id", "driver_version", "memory.used", "memory.total",
    "utilization.gpu", "temperature.gpu", "power.draw",
    "ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total",
)  # fmt: skip
QUERIES = (
    ("gpus", "--query-gpu=" + ",".join(MAIN_FIELDS)),
    ("throttle", "--query-gpu=index,clocks_throttle_reasons.active"),
    ("memory_health", "--query-gpu=index,retired_pages.pending,remapped_rows.pending,"
     "remapped_rows.failure"),
    ("apps", "--query-compute-apps=gpu_uuid,pid,process_name,used_memory"),
)  # fmt: skip
HELD_WITHOUT_PROCESS_MIB = 1024
LINE_CHARS = 500

# nvml.h nvmlClocksThrottleReason* bits.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

# What nvidia-smi prints when it cannot work, most specific first (FORMATS.md section 5).
FAILURES = (
    ("gpu_lost", re.compile(r"GPU is lost|fallen off the bus", re.I)),
    ("version_mismatch", re.compile(r"Driver/library version mismatch", re.I)),
    ("driver_not_loaded", re.compile(r"couldn't communicate with the NVIDIA driver", re.I)),
    ("no_devices", re.compile(r"No devices were found", re.I)),
    ("gpu_inaccessible", re.compile(r"Unable to determine the device handle", re.I)),
    ("nvml_unknown_error", re.compile(r"Failed to initialize NVML: Unknown Error", re.I)),
    ("nvml_failed", re.compile(r"Failed to initialize NVML", re.I)),
)
UNSUPPORTED_FIELD = re.compile(r"is not a valid field to query", re.I)


class Gpu(BaseModel):
    index: int | None = None
    uuid: str | None = None
    name: str | None = None
    bus_id: str | None = Field(
        default=None, description="As nvidia-smi prints it: 00000000:3B:00.0."
    )
    driver_version: str | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    utilization_percent: int | None = None
    temperature_c: int | None = None
    power_draw_w: float | None = None
    ecc_corrected_volatile: int | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_corrected_aggregate: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    throttle_reasons: list[str] | None = Field(default=None, description="None: not known.")
    retired_pages_pending: bool | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    raw_line: int


class ComputeApp(BaseModel):
    gpu_uuid: str | None
    pid: int | None = Field(description="A host PID: inside a container it may not exist.")
    process_name: str | None = Field(description="None for [Not Found] (another PID namespace).")
    used_memory_mib: int | None
    raw_line: int


class SmiRun(BaseModel):
    """One nvidia-smi invocation: what it was asked, how it ended, what it said."""

    query: str
    exit_status: int | None = Field(description="None: it never returned (hung, cut).")
    first_line: int
    last_line: int
    message: str | None = Field(default=None, description="Its non-CSV text, if any.")


class GpuFacts(ProbeFacts):
    smi_present: bool | None = Field(default=None, description="None when not known.")
    host_clock: datetime | None = Field(default=None, description="When the queries began.")
    gpus: list[Gpu] = Field(default_factory=list)
    apps: list[ComputeApp] = Field(default_factory=list)
    apps_known: bool = Field(default=False, description="The compute-apps query succeeded.")
    runs: list[SmiRun] = Field(default_factory=list)
    failure: str | None = Field(
        default=None,
        description="timed_out, gpu_lost, gpu_inaccessible, driver_not_loaded, no_devices, "
        "version_mismatch, nvml_unknown_error, nvml_failed, failed.",
    )
    failure_message: str | None = None
    failure_run: SmiRun | None = None


def sections(options: CollectOptions) -> list[SectionSpec]:
    values: dict[str, ShellValue] = {"line_chars": LINE_CHARS}
    values.update({f"query_{name}": query for name, query in QUERIES})
    return [
        SectionSpec(
            name=SECTION,
            shell=probe_shell(__name__, values),
            timeout_s=options.gpu_timeout,
            max_bytes=256 * 1024,
        )
    ]


def parse(captures: Captures, options: CollectOptions) -> GpuFacts:
    """Read the ``gpu`` section.

    >>> from forensics.core.probe import Captured
    >>> text = (
    ...     "clock 1764450000\\n@ run gpus\\n@ exit gpus 0\\n"
    ...     "|index, uuid, name, memory.used [MiB], memory.total [MiB], "
    ...     "ecc.errors.uncorrected.volatile.total\\n"
    ...     "|0, GPU-5a1c, NVIDIA H100 80GB HBM3, 61234 MiB, 81559 MiB, [N/A]\\n"
    ...     "@ run apps\\n@ exit apps 0\\n|gpu_uuid, pid, process_name, used_gpu_memory [MiB]\\n"
    ...     "|GPU-5a1c, 2151960, [Not Found], 55310\\n"
    ... )
    >>> facts = parse({"gpu": Captured.complete("gpu", text)}, CollectOptions())
    >>> g = facts.gpus[0]
    >>> g.index, g.name, g.memory_used_mib, g.memory_total_mib, g.ecc_uncorrected_volatile
    (0, 'NVIDIA H100 80GB HBM3', 61234, 81559, None)
    >>> a = facts.apps[0]
    >>> a.gpu_uuid, a.pid, a.process_name, a.used_memory_mib, facts.apps_known, facts.failure
    ('GPU-5a1c', 2151960, None, 55310, True, None)
    """
    captured, reason = open_section(captures, SECTION)
    if captured is None:
        return GpuFacts(unavailable=reason)
    facts = GpuFacts()
    runs: dict[str, tuple[SmiRun, list[tuple[int, str]]]] = {}
    current: tuple[SmiRun, list[tuple[int, str]]] | None = None
    for number, line in enumerate(captured.text.split("\n"), start=1):
        if line.startswith("|"):
            if current is not None:
                current[1].append((number, line[1:]))
                current[0].last_line = number
        elif line.startswith("clock "):
            facts.host_clock = _epoch(line[6:])
        elif line == "@ absent":
            facts.smi_present = False
        elif line.startswith("@ run "):
            facts.smi_present = True
            run = SmiRun(query=line[6:], exit_status=None, first_line=number, last_line=number)
            current = (run, [])
            runs[run.query] = current
            facts.runs.append(run)
        elif line.startswith("@ exit ") and current is not None:
            status = line.rsplit(" ", 1)[-1]
            current[0].exit_status = int(status) if status.isdigit() else None
            current[0].last_line = number
    for name, (run, lines) in runs.items():
        _read_run(facts, name, run, lines)
    _judge_failure(facts, captured.result.timed_out, reason, options.gpu_timeout)
    return facts


def _read_run(facts: GpuFacts, name: str, run: SmiRun, lines: list[tuple[int, str]]) -> None:
    header, rows, other = _csv(lines)
    if other:
        run.message = " / ".join(text.strip() for _, text in other if text.strip())[:1000] or None
    if name == "gpus":
        facts.gpus = [_gpu(header, number, values) for number, values in rows]
    elif name == "apps":
        facts.apps = [_app(header, number, values) for number, values in rows]
        facts.apps_known = run.exit_status == 0
    elif name in ("throttle", "memory_health"):
        by_index = {gpu.index: gpu for gpu in facts.gpus}
        for _, values in rows:
            record = dict(zip(header, values, strict=False))
            gpu = by_index.get(_smi_int(record.get("index")))
            if gpu is not None:
                _extra(gpu, record)


def _csv(
    lines: list[tuple[int, str]],
) -> tuple[list[str], list[tuple[int, list[str]]], list[tuple[int, str]]]:
    """Split one query's output into its header, its rows, and any other text."""
    header: list[str] = []
    rows: list[tuple[int, list[str]]] = []
    other: list[tuple[int, str]] = []
    for number, text in lines:
        values = [value.strip() for value in text.split(", ")]
        if not header and len(values) > 1 and not _is_failure_text(text):
            header = [re.sub(r"\s*\[.*\]$", "", value) for value in values]
        elif header and len(values) >= len(header) and not _is_failure_text(text):
            rows.append((number, values))
        elif text.strip():
            other.append((number, text))
    return header, rows, other


def _is_failure_text(text: str) -> bool:
    return any(pattern.search(text) for _, pattern in FAILURES) or bool(
        UNSUPPORTED_FIELD.search(text)
    )


def _gpu(header: list[str], number: int, values: list[str]) -> Gpu:
    record = dict(zip(header, values, strict=False))
    return Gpu(
        index=_smi_int(record.get("index")),
        uuid=_text(record.get("uuid")),
        name=_text(record.get("name")),
        bus_id=_text(record.get("pci.bus_id")),
        driver_version=_text(record.get("driver_version")),
        memory_used_mib=_smi_int(record.get("memory.used")),
        memory_total_mib=_smi_int(record.get("memory.total")),
        utilization_percent=_smi_int(record.get("utilization.gpu")),
        temperature_c=_smi_int(record.get("temperature.gpu")),
        power_draw_w=_smi_float(record.get("power.draw")),
        ecc_corrected_volatile=_smi_int(record.get("ecc.errors.corrected.volatile.total")),
        ecc_uncorrected_volatile=_smi_int(record.get("ecc.errors.uncorrected.volatile.total")),
        ecc_corrected_aggregate=_smi_int(record.get("ecc.errors.corrected.aggregate.total")),
        ecc_uncorrected_aggregate=_smi_int(record.get("ecc.errors.uncorrected.aggregate.total")),
        raw_line=number,
    )


def _app(header: list[str], number: int, values: list[str]) -> ComputeApp:
    # A process name may itself hold ", ": the fields around it are fixed.
    if len(values) > len(header) and header[-1:] == ["used_gpu_memory"]:
        middle = header.index("process_name") if "process_name" in header else None
        if middle is not None:
            extra = len(values) - len(header)
            joined = ", ".join(values[middle : middle + extra + 1])
            values = [*values[:middle], joined, *values[middle + extra + 1 :]]
    record = dict(zip(header, values, strict=False))
    return ComputeApp(
        gpu_uuid=_text(record.get("gpu_uuid")),
        pid=_smi_int(record.get("pid")),
        process_name=_text(record.get("process_name")),
        used_memory_mib=_smi_int(record.get("used_gpu_memory")),
        raw_line=number,
    )


def _extra(gpu: Gpu, record: dict[str, str]) -> None:
    mask = _text(record.get("clocks_throttle_reasons.active"))
    if mask is not None:
        try:
            bits = int(mask, 16)
        except ValueError:
            bits = -1
        if bits >= 0:
            gpu.throttle_reasons = [name for bit, name in THROTTLE_REASONS.items() if bits & bit]
    gpu.retired_pages_pending = _yes(record.get("retired_pages.pending"))
    gpu.remapped_rows_pending = _yes(record.get("remapped_rows.pending"))
    gpu.remapped_rows_failure = _yes(record.get("remapped_rows.failure"))


def _judge_failure(facts: GpuFacts, timed_out: bool, reason: str | None, timeout_s: float) -> None:
    hung = [run for run in facts.runs if run.exit_status is None]
    if hung and timed_out:
        facts.failure, facts.failure_run = "timed_out", hung[0]
        facts.failure_message = f"the {hung[0].query} query did not answer within {timeout_s:g} s"
        return
    main = next((run for run in facts.runs if run.query == "gpus"), None)
    if main is None or main.exit_status == 0:
        return
    facts.failure_run = main
    facts.failure_message = main.message or (
        f"exit status {main.exit_status}" if main.exit_status is not None else reason
    )
    if main.exit_status == 127:
        facts.failure = "not_runnable"
        return
    text = main.message or ""
    facts.failure = next((kind for kind, pattern in FAILURES if pattern.search(text)), "failed")


def _text(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value or (value.startswith("[") and value.endswith("]")) or value == "N/A":
        return None
    return value


def _number_text(value: str | None) -> str | None:
    text = _text(value)
    if text is None:
        return None
    return re.sub(r"\s*(MiB|%|W|MHz|C)$", "", text)


def _smi_int(value: str | None) -> int | None:
    """An nvidia-smi field as a whole number, its unit dropped ("1024 MiB", "87.00 %")."""
    text = _number_text(value)
    whole = parse_int(text)
    if whole is not None:
        return whole
    number = parse_float(text)
    return None if number is None else int(number)


def _smi_float(value: str | None) -> float | None:
    """An nvidia-smi field as a number, its unit dropped ("245.31 W")."""
    return parse_float(_number_text(value))


def _yes(value: str | None) -> bool | None:
    text = _text(value)
    return {"yes": True, "no": False}.get(text.lower()) if text else None


def _epoch(text: str) -> datetime | None:
    text = text.strip()
    return datetime.fromtimestamp(int(text), UTC) if text.isdigit() and len(text) < 12 else None


def rules(facts: GpuFacts, context: RuleContext) -> list[Finding]:
    """``gpu.smi_failed`` and ``gpu.xid`` need the kernel log too: they are raised by
    ``forensics/judge/rules/gpu_errors.py``."""
    findings = []
    if facts.apps_known:
        findings += [_held(gpu) for gpu in facts.gpus if _holds_memory_alone(facts, gpu)]
    findings += [finding for gpu in facts.gpus if (finding := _ecc(gpu)) is not None]
    return findings


def _holds_memory_alone(facts: GpuFacts, gpu: Gpu) -> bool:
    if gpu.memory_used_mib is None or gpu.memory_used_mib < HELD_WITHOUT_PROCESS_MIB:
        return False
    return not any(app.gpu_uuid == gpu.uuid for app in facts.apps)


def _held(gpu: Gpu) -> Finding:
    where = f"GPU {gpu.index} ({gpu.name}, {gpu.bus_id})"
    return Finding(
        id="gpu.memory_held_without_process",
        severity=Severity.warning,
        title=f"GPU {gpu.index} has {gpu.memory_used_mib} MiB in use but no compute process",
        explanation=(
            f"{where} has {gpu.memory_used_mib} of {gpu.memory_total_mib} MiB in use, yet "
            "nvidia-smi lists no compute process on it. Either a process that is gone still "
            "holds it (a zombie whose threads are alive, or a child that inherited the CUDA "
            "context), or a process in another container or PID namespace uses it: the driver "
            "reports host PIDs, and inside a container nvidia-smi often lists none. Sure about "
            "the numbers; which of these it is needs the checks below."
        ),
        next_steps=[
            "ps -eo pid,ppid,stat,etimes,args | awk '$3 ~ /^Z/' (zombies, Zl = threads alive)",
            "fuser -v /dev/nvidia* (who holds the device files, in this namespace)",
            "On the host itself (not a container): nvidia-smi --query-compute-apps="
            "gpu_uuid,pid,process_name,used_memory --format=csv",
        ],
        subject={"gpu": gpu.index, "uuid": gpu.uuid, "memory_used_mib": gpu.memory_used_mib},
        evidence=[
            cite(
                SECTION,
                gpu.raw_line,
                f"GPU {gpu.index}: {gpu.memory_used_mib} MiB used, no compute app listed",
            )
        ],
    )


def _ecc(gpu: Gpu) -> Finding | None:
    problems: list[tuple[Severity, str]] = []
    if gpu.ecc_uncorrected_volatile:
        problems.append(
            (Severity.critical, f"{gpu.ecc_uncorrected_volatile} uncorrected ECC errors since "
             "the driver loaded")
        )  # fmt: skip
    if gpu.remapped_rows_failure:
        problems.append((Severity.critical, "row remapping failed (no spare rows left)"))
    if gpu.ecc_uncorrected_aggregate and not gpu.ecc_uncorrected_volatile:
        problems.append(
            (Severity.warning, f"{gpu.ecc_uncorrected_aggregate} uncorrected ECC errors over "
             "its lifetime")
        )  # fmt: skip
    if gpu.remapped_rows_pending:
        problems.append((Severity.warning, "a row remap is pending: the GPU needs a reset"))
    if gpu.retired_pages_pending:
        problems.append((Severity.warning, "a page retirement is pending: the GPU needs a reset"))
    if not problems:
        return None
    severity = max((s for s, _ in problems), key=lambda s: s.rank)
    said = "; ".join(text for _, text in problems)
    return Finding(
        id="gpu.ecc_errors",
        severity=severity,
        title=f"GPU {gpu.index} memory errors: {said}",
        explanation=(
            f"GPU {gpu.index} ({gpu.name}, {gpu.bus_id}) reports {said}. Uncorrected ECC errors "
            "kill the CUDA program that hit them (often with Xid 48, 94 or 95 in the kernel log) "
            "and point at failing GPU memory."
        ),
        next_steps=[
            f"nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT -i {gpu.index}",
            "dmesg -T | grep -i xid (Xid 48/63/64/94/95)",
            "Drain the GPU; reset it (nvidia-smi -r) or reboot; if errors persist, open an RMA",
        ],
        subject={"gpu": gpu.index, "uuid": gpu.uuid},
        evidence=[cite(SECTION, gpu.raw_line, f"GPU {gpu.index}: {said}")],
    )


def timeline(facts: GpuFacts) -> list[TimelineEvent]:
    if facts.failure is None or facts.host_clock is None:
        return []
    return [
        TimelineEvent(
            time=facts.host_clock,
            source=SECTION,
            line=facts.failure_run.first_line if facts.failure_run else None,
            kind=GPU_FAILURE,
            text=f"nvidia-smi failed ({facts.failure}): {facts.failure_message}",
        )
    ]


PROBE = Probe(
    name="gpu",
    run_order=90,
    report_order=40,
    sections=sections,
    facts_model=GpuFacts,
    parse=parse,
    timeline=timeline,
    rules=rules,
)
