"""``forensics history`` (past runs from the sweep history) and ``forensics diff`` (what
changed between two bundles)."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from forensics.cli.messages import warn
from forensics.core.errors import UsageError
from forensics.core.escaping import inert, inert_json
from forensics.core.models import CollectStatus
from forensics.fleet.fingerprint import Changes, compare, fully_read_sections, track
from forensics.fleet.store import History, RunRow
from forensics.judge.analysis import analyze
from forensics.judge.host_report import HostReport
from forensics.remote import bundle
from forensics.reports.terminal import plain_console, plain_table


def history_command(
    host: Annotated[str | None, typer.Option(help="Only this host (its inventory name).")] = None,
    out: Annotated[Path, typer.Option(help="The sweeps' output directory.")] = Path(
        "forensics-bundles"
    ),
    history: Annotated[
        Path | None, typer.Option(help="History database (default OUT/history.sqlite).")
    ] = None,
    limit: Annotated[int, typer.Option(help="How many runs, newest first.")] = 50,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON lines.")] = False,
) -> None:
    """List past runs from the sweep history: when, which host, how it went, and what was
    new or resolved compared with that host's run before.

    Example: forensics history --host prover-a
    """
    path = history or out / "history.sqlite"
    if not path.exists():
        raise UsageError(f"no history at {path}: run `forensics sweep` first, or pass --history")
    store = History.open_read_only(path)
    try:
        rows = store.runs(host, limit)
    finally:
        store.close()
    if json_output:
        for row in rows:
            sys.stdout.write(json.dumps(asdict(row), default=str) + "\n")
        return
    if not rows:
        sys.stdout.write(inert(f"no runs{f' of {host}' if host else ''} in {path}") + "\n")
        return
    sys.stdout.write(render_runs(rows))


def render_runs(rows: list[RunRow], width: int | None = None) -> str:
    buffer = io.StringIO()
    console = plain_console(buffer, width)
    table = plain_table(
        "started (UTC)", "host", "status", "worst", "findings", "new", "resolved", "sweep / why"
    )
    for row in rows:
        table.add_row(
            Text(f"{row.started:%Y-%m-%d %H:%M:%S}"),
            Text(inert(row.host)),
            Text(row.status),
            Text(row.worst or "-"),
            Text(str(row.findings)),
            Text("-" if row.new is None else str(row.new)),
            Text("-" if row.resolved is None else str(row.resolved)),
            Text(inert(row.reason if row.reason and row.status != "ok" else row.sweep_id or "-")),
        )
    console.print(table)
    return buffer.getvalue()


def diff_command(
    before: Annotated[Path, typer.Argument(metavar="BUNDLE_A", help="The earlier bundle.")],
    after: Annotated[Path, typer.Argument(metavar="BUNDLE_B", help="The later bundle.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
) -> None:
    """What is new, still present and resolved in BUNDLE_B compared with BUNDLE_A, both
    judged by today's rules.

    Example: forensics diff forensics-bundles/gpu-a/2026-11-29T20-15-03Z \\
    forensics-bundles/gpu-a/2026-11-29T21-15-03Z
    """
    first = _judge(before)
    second = _judge(after)
    if first.target.name != second.target.name:
        warn(
            f"the bundles are of different targets ({first.target.name}, {second.target.name}); "
            "findings are compared without the host"
        )
    changes = bundle_changes(first, second)
    if json_output:
        sys.stdout.write(inert_json(changes.model_dump_json(indent=2)) + "\n")
        return
    sys.stdout.write(render_changes(changes, before, after))


def bundle_changes(first: HostReport, second: HostReport) -> Changes:
    """Findings are fingerprinted under one name, so two bundles of renamed or different
    targets still compare finding by finding."""
    key = first.target.name
    changes = compare(
        track(first.findings, key),
        track(second.findings, key),
        fully_read_sections(second.sections),
        complete=second.status is CollectStatus.ok,
    )
    changes.previous_run = first.started
    return changes


def _judge(path: Path) -> HostReport:
    manifest, captures = bundle.load(path)
    return analyze(manifest, captures, bundle=str(path))


def render_changes(changes: Changes, before: Path, after: Path) -> str:
    lines = [
        f"{after} compared with {before}: {len(changes.new)} new, {len(changes.still)} still "
        f"present, {len(changes.resolved)} resolved"
        + (f", {len(changes.not_rechecked)} not re-checked" if changes.not_rechecked else "")
    ]
    for kind in ("new", "still", "resolved", "not_rechecked"):
        for finding in getattr(changes, kind):
            lines.append(
                f"  {kind:<9} {finding.severity.value:<8} {finding.id}: {inert(finding.title)}"
            )
    return "\n".join(lines) + "\n"
