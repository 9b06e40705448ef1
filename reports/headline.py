"""The one sentence at the top of every report, built from the findings alone.

It answers the question of the page before anyone scrolls: the worst finding's title, with
the process it is about when the title does not name it, then the worst finding of up to
two other topics (an OOM verdict beside a zombie), then how many more there are. With no
findings it says what was checked, so that "nothing found" is never mistaken for "nothing
looked at". Other subject keys (times, seconds since boot, scopes, counters) are for
machines and the finding's own section, never for this sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from forensics.core.models import CollectStatus, Finding, Severity
from forensics.judge.host_report import HostReport

OTHER_TOPICS = 2
NAME_CHARS = 60


@dataclass(frozen=True)
class Headline:
    """``severity`` is that of the worst finding (None when there is none); ``text`` is
    plain text, escaped by whichever template prints it."""

    severity: Severity | None
    text: str


def headline(report: HostReport) -> Headline:
    """Summarise ``report`` in one sentence (findings are worst first).

    >>> from datetime import UTC, datetime
    >>> from forensics.core.models import Target
    >>> now = datetime(2025, 11, 29, tzinfo=UTC)
    >>> zombie = Finding(id="process.zombie_threads_alive", severity="critical",
    ...     title="cuzk (pid 4242) is a zombie with 3 live threads",
    ...     explanation="", subject={"pid": 4242, "name": "cuzk", "threads": 3})
    >>> no_oom = Finding(id="oom.ruled_out", severity="info", explanation="",
    ...     title="Not OOM-killed: the kernel log reaches back to boot and the cgroup "
    ...     "counted no OOM kill")
    >>> report = HostReport(tool_version="0", target=Target(name="gpu-a"), status="ok",
    ...     started=now, finished=now, findings=[zombie, no_oom])
    >>> print(headline(report).text)
    cuzk (pid 4242) is a zombie with 3 live threads; not OOM-killed: the kernel log reaches
    back to boot and the cgroup counted no OOM kill.
    >>> crash = Finding(id="kernel.segfault", severity="warning", explanation="",
    ...     title="python3 crashed: segfault (SIGSEGV) in libc.so.6",
    ...     subject={"name": "python3", "kind": "segfault", "count": 1, "pid": 48213})
    >>> print(headline(report.model_copy(update={"findings": [crash]})).text)
    python3 crashed: segfault (SIGSEGV) in libc.so.6 (pid 48213).
    """
    if report.status not in (CollectStatus.ok, CollectStatus.partial):
        reason = f": {report.status_reason}" if report.status_reason else ""
        return Headline(None, f"Not collected ({report.status.value}){reason}.")
    if not report.findings:
        return Headline(None, _nothing_found(report))
    worst = report.findings[0]
    shown = [worst]
    families = {_family(worst)}
    for finding in report.findings[1:]:
        if len(shown) > OTHER_TOPICS:
            break
        if _family(finding) not in families:
            shown.append(finding)
            families.add(_family(finding))
    parts = [_with_subject(worst)] + [_lower_first(f.title) for f in shown[1:]]
    text = "; ".join(parts)
    rest = len(report.findings) - len(shown)
    if rest:
        text += f"; and {rest} more finding{'s' if rest > 1 else ''}"
    return Headline(worst.severity, text.rstrip(".") + ".")


def _nothing_found(report: HostReport) -> str:
    checked = [name for name, facts in report.facts if facts is not None]
    sections = len(report.sections)
    what = ", ".join(checked) if checked else "no probe"
    plural = "s" if sections != 1 else ""
    return f"No findings; checked {what} ({sections} section{plural}, all complete)."


def _family(finding: Finding) -> str:
    return finding.id.split(".", 1)[0]


def _with_subject(finding: Finding) -> str:
    """The title, then the process's name and pid where the title lacks them: ``(pid 4242)``."""
    title = finding.title.rstrip(".")
    name, pid = finding.subject.get("name"), finding.subject.get("pid")
    missing = []
    if isinstance(name, str) and name.strip() and name not in title:
        missing.append(_short(name))
    if isinstance(pid, int) and not isinstance(pid, bool) and f"pid {pid}" not in title:
        missing.append(f"pid {pid}")
    return f"{title} ({', '.join(missing)})" if missing else title


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 3] + "..."


def _lower_first(title: str) -> str:
    """Lower-case a leading capital of an ordinary word, not of a name such as ``OOM``."""
    title = title.rstrip(".")
    if len(title) > 1 and title[0].isupper() and not title[1].isupper():
        return title[0].lower() + title[1:]
    return title
