"""The kernel log samples of tests/samples/kernel, and the ``kernel_log`` section text a
host would send around one of them."""

from __future__ import annotations

from pathlib import Path

from forensics.core.models import CollectOptions, SectionResult
from forensics.core.probe import Captured
from forensics.probes import kernel_log

SAMPLES = Path(__file__).parent / "samples" / "kernel"
# 2025-11-29T18:40:00Z, the boot time the section texts below claim.
BTIME = 1764441600


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def section_text(
    log: str, source: str = "dmesg", header: str = "", utc_offset: str = "+0000"
) -> str:
    """What the section prints when ``source`` answered with ``log``."""
    return (
        f"dmesg_restrict 1\nbtime {BTIME}\nuptime 200000.5\nutc_offset {utc_offset}\n"
        f"tried {source} 0 ok\nsource {source}\nlog_bytes {len(log)}\n"
        f"log_lines {log.count(chr(10))}\n{header}\n{kernel_log.MARKER}\n{log}"
    )


def parse_section(text: str, timed_out: bool = False) -> kernel_log.KernelLogFacts:
    result = SectionResult(
        name=kernel_log.SECTION,
        command="",
        exit_status=0,
        duration_s=0.1,
        bytes=len(text),
        truncated=False,
        timed_out=timed_out,
        finished=True,
    )
    captured = Captured(result=result, text=text)
    return kernel_log.parse({kernel_log.SECTION: captured}, CollectOptions())
