"""The kernel log parsers, and the rules and timeline on top of them, never raise whatever
the host sent: arbitrary text, and real samples cut at any byte or with lines dropped."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.facts import Facts
from forensics.core.models import CollectOptions
from forensics.core.probe import RuleContext
from forensics.judge.rules import gpu_errors, oom
from forensics.judge.timeline import kernel_events
from forensics.kernel.crashes import find_crashes
from forensics.kernel.faults import find_faults
from forensics.kernel.gpu_driver import find_gpu_driver_events
from forensics.kernel.hung_tasks import find_hung_tasks
from forensics.kernel.lines import Clock, read_lines
from forensics.kernel.machine_checks import find_machine_checks
from forensics.kernel.oom_report import find_oom_kills
from forensics.kernel.pcie_aer import find_pcie_errors
from forensics.kernel.sxid import find_sxids
from forensics.kernel.xid import bus_id, describe, find_xids, parse_xid
from forensics.probes import kernel_log_rules
from tests.kernel_samples import SAMPLES, parse_section, section_text
from tests.process_section import HostProcess
from tests.process_section import parse_text as parse_processes
from tests.process_section import section_text as process_table

SAMPLE_TEXTS = [
    path.read_text()
    for path in sorted(SAMPLES.rglob("*"))
    if path.is_file() and path.suffix not in (".md", ".expected")
]
ALL_SAMPLES = "\n".join(SAMPLE_TEXTS)
CLOCK = Clock(boot_time=datetime(2026, 1, 1, tzinfo=UTC), uptime_s=1e6, utc_offset=None)

# Text that looks like kernel lines: stamps, keywords and separators mixed with noise.
PIECES = st.sampled_from(
    [
        "[  12.345678] ", "[ 1.0] [  T12] ", "May 15 23:09:27 h kernel: ", "\n", " ", ",", "(",
        ")", ":", "=", "Killed process 12 (", "Kill process 3 (x) score 9 or sacrifice child",
        "Memory cgroup out of memory: ", "Out of memory: ", "oom-kill:constraint=", ",pid=",
        ",uid=", ",task=", ",task_memcg=", "global_oom", " invoked oom-killer: gfp_mask=",
        "order=", "total-vm:", "kB", "pgtables:", "oom_reaper: reaped process 1 (",
        "callbacks suppressed", "segfault at ", " ip ", " error ", "traps: ", "[7]",
        " general protection fault ip:", "INFO: task a:1 blocked for more than ",
        "NVRM: Xid (PCI:0000:3b:00): ", "NVRM: GPU at PCI:0000:3b:00: GPU-", "pid=", "name=",
        "[Hardware Error]: ", "EDAC MC0: 1 UE ", "memory: usage 1kB, limit ", "Task in /a ",
        "2026-04-09T21:13:46.8+00:00 h kernel: ", "9" * 30, "\x00", "\u0663", "²",
        "[Sun Nov 30 02:03:31 2025] ", "2025-11-30T03:03:31,118233+01:00 ",
        "Nov 30 02:03:31.118233 h kernel: ", "Sun 2025-11-30 02:03:31 CEST h kernel: ",
        "2025-11-30T03:03:31+0100 h kernel: ", "=== previous boot ===\n", ", UID 0,",
        "BUG: kernel NULL pointer dereference, address: ", "Oops: 0000 [#1] SMP\n",
        "kernel BUG at a.c:1!", "CPU: 3 PID: 9 Comm: x Tainted: P\n", "RIP: 0010:f+0x1/0x2 [m]",
        "watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [a:1]", "Kernel panic - not syncing: ",
        "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", "hard LOCKUP on cpu 5",
        "BUG: scheduling while atomic: ", "pcieport 0000:00:03.0: AER: Corrected error received: ",
        "id=0018", "0000:5e:00.0", "PCIe Bus Error: severity=Uncorrectable (Fatal), type=",
        "{1}[Hardware Error]: ", "section_type: PCIe error", "device_id: 0000:b1:00.0",
        "event severity: corrected", "NVRM: The NVIDIA GPU 0000:b3:00.0\n",
        "fallen off the bus", "NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x62:0x40:2404)",
        "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:61:00 (printing 1 of every ",
        "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, ", "Fatal, Link 3",
    ]
)  # fmt: skip
KERNELISH = st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=60).map("".join)


def parse_all(text: str) -> None:
    lines = read_lines(text, 1, CLOCK)
    find_oom_kills(lines, "k")
    find_faults(lines, "k")
    find_hung_tasks(lines, "k")
    find_xids(lines, "k")
    pcie = find_pcie_errors(lines, "k")
    find_machine_checks(lines, "k", pcie.hardware_error_lines)
    find_crashes(lines, "k")
    find_gpu_driver_events(lines, "k")
    find_sxids(lines, "k")
    parse_xid(text)
    read_lines(text, 1, CLOCK, previous_boot=True)


# A process table whose focus matches include a zombie and a cut program name, so that
# the verdict's PID and program matching run on whatever victims the text holds.
TABLE = [
    HostProcess(pid=1, name="tini", argv=["tini"], start_ticks=100),
    HostProcess(pid=12, name="java", state="Z", start_ticks=500),
    HostProcess(pid=3, name="cuzk-prover-wor", argv=["/opt/cuzk-prover-worker"]),
]


def judge(text: str, focus: str | None = None) -> None:
    processes = parse_processes(process_table(TABLE, TABLE[:1]), focus=focus)
    facts = Facts(kernel_log=parse_section(text), processes=processes)
    context = RuleContext(
        options=CollectOptions(focus=focus), sections={}, collected_at=datetime.now(UTC)
    )
    oom.oom_verdict(facts, context)
    kernel_log_rules.rules(facts.kernel_log, context)
    gpu_errors.gpu_errors(facts, context)
    kernel_events(facts)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), KERNELISH))
def test_line_parsers_never_raise_on_arbitrary_text(text: str) -> None:
    parse_all(text)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(ALL_SAMPLES)), st.integers(min_value=0))
def test_line_parsers_never_raise_on_real_samples_cut_anywhere(cut: int, start: int) -> None:
    parse_all(ALL_SAMPLES[start % (cut + 1) : cut])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLE_TEXTS), st.data())
def test_dropping_lines_of_a_sample_never_adds_kills(text: str, data: st.DataObject) -> None:
    lines = text.splitlines()
    kept = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    partial = "\n".join(line for line, keep in zip(lines, kept, strict=True) if keep)
    full = find_oom_kills(read_lines(text, 1, CLOCK), "k").kills
    some = find_oom_kills(read_lines(partial, 1, CLOCK), "k").kills
    assert {k.pid for k in some} <= {k.pid for k in full}


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), KERNELISH), st.one_of(st.none(), st.text(max_size=5)))
def test_section_parser_and_rules_never_raise_on_arbitrary_sections(
    text: str, focus: str | None
) -> None:
    judge(text, focus)
    judge(section_text(text), focus)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(SAMPLE_TEXTS), st.integers(min_value=0, max_value=20000))
def test_section_parser_and_rules_never_raise_on_truncated_sections(text: str, cut: int) -> None:
    judge(section_text(text)[:cut], "java")


@given(st.text(max_size=30))
def test_bus_id_never_raises(text: str) -> None:
    bus_id(text)


@given(st.integers())
def test_every_xid_code_has_a_meaning_an_owner_and_a_step(code: int) -> None:
    meaning = describe(code)
    assert meaning.meaning and meaning.owner_words and meaning.next_step
