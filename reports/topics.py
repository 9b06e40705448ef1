"""Which per-probe sections a host report shows, and in what order.

A probe's section is a template partial named after its field in ``Facts``:
``templates/partials/<field>.md.j2`` and ``.html.j2``. The report includes it when
``report.facts.<field>`` is not None and the partial exists, so a probe that has not run
leaves no empty heading, and a probe without a partial is simply not shown (its facts are
still in the JSON). The rule is written down in docs/REPORTS.md.
"""

from __future__ import annotations

from pathlib import Path

from forensics.judge.host_report import HostReport
from forensics.probes import PROBES

PARTIALS = Path(__file__).parent / "templates" / "partials"

ORDER = tuple(probe.name for probe in sorted(PROBES, key=lambda p: (p.report_order, p.name)))
"""Where each section goes in the page, read first to last, as each probe's
``report_order`` says: the process tree around the focus and the zombies, then memory, GPU
and logs, and the host's identity last."""


def topics(report: HostReport, extension: str) -> list[str]:
    """The ``Facts`` field names whose partial ``partials/<name>.<extension>.j2`` applies.

    >>> from datetime import UTC, datetime
    >>> from forensics.core.models import Target
    >>> from forensics.core.facts import Facts
    >>> from forensics.probes.system import SystemFacts
    >>> now = datetime(2025, 11, 29, tzinfo=UTC)
    >>> report = HostReport(tool_version="0", target=Target(name="local"), status="ok",
    ...     started=now, finished=now, facts=Facts(system=SystemFacts(hostname="gpu-a")))
    >>> topics(report, "md")
    ['system']
    >>> topics(HostReport(tool_version="0", target=Target(name="local"), status="ok",
    ...     started=now, finished=now), "md")
    []
    """
    present = {name for name, facts in report.facts if facts is not None}
    return [
        name
        for name in ORDER
        if name in present and (PARTIALS / f"{name}.{extension}.j2").is_file()
    ]
