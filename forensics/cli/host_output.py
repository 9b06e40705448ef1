"""What ``collect`` and ``analyze`` print, and the exit status they end with."""

from __future__ import annotations

import sys

from forensics.core.exit_status import ExitStatus
from forensics.core.models import Severity
from forensics.judge.host_report import HostReport
from forensics.reports import Format, render_host


def print_report(report: HostReport, format: Format) -> None:
    sys.stdout.write(render_host(report, format).rstrip("\n") + "\n")


def exit_status(report: HostReport, fail_on: Severity | None) -> ExitStatus:
    """1 when the report has a finding at or above ``fail_on``, else 0."""
    if fail_on is None:
        return ExitStatus.ok
    worst = report.worst
    found = worst is not None and worst.rank >= fail_on.rank
    return ExitStatus.findings if found else ExitStatus.ok
