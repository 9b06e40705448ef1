"""``forensics sweep``: collect the inventory's hosts, once or on a schedule."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from forensics.cli.fail_on import parse_fail_on
from forensics.cli.messages import say, warn
from forensics.cli.options import Given, declared_options, read_duration
from forensics.cli.ticket import settings_from_options
from forensics.collect import room_needed
from forensics.core.errors import UsageError
from forensics.core.escaping import inert_json
from forensics.core.exit_status import ExitStatus
from forensics.core.models import CollectOptions, Severity, SshOptions
from forensics.fleet.inventory import load_inventory
from forensics.fleet.lock import SweepLock
from forensics.fleet.progress import SweepProgress
from forensics.fleet.report import FleetReport
from forensics.fleet.schedule import run_every
from forensics.fleet.store import History
from forensics.fleet.sweep import (
    FLEET_REPORT,
    QuietObserver,
    StopRequest,
    Sweep,
    abandoned_threads,
    signal_handlers,
)
from forensics.remote import bundle
from forensics.reports import Format, render_fleet
from forensics.reports.fleet import fleet_summary
from forensics.tickets.sweep import SweepTickets


def exit_status(
    report: FleetReport, fail_on: Severity | None, allow_unreachable: int
) -> ExitStatus:
    """130/143 when a signal stopped it; 3 when more hosts than allowed were not collected;
    1 when a collected host has a finding at or above ``fail_on``; else 0."""
    if report.interrupted_by is not None:
        return ExitStatus.by_signal(report.interrupted_by)
    if len(report.not_collected) > allow_unreachable:
        return ExitStatus.not_collected
    if fail_on is not None and any(
        host.worst is not None and host.worst.rank >= fail_on.rank for host in report.hosts
    ):
        return ExitStatus.findings
    return ExitStatus.ok


@declared_options(
    SshOptions,
    CollectOptions,
    only=("connect_timeout", "timeout"),
    more_help={
        "connect_timeout": "Overrides the inventory's.",
        "timeout": "Per host; overrides the inventory's.",
    },
)
def sweep_command(
    inventory: Annotated[Path, typer.Option("--inventory", help="The inventory file.")] = Path(
        "inventory.yaml"
    ),
    group: Annotated[
        list[str] | None, typer.Option("--group", "-g", help="Only this group (repeatable).")
    ] = None,
    limit: Annotated[
        list[str] | None,
        typer.Option("--limit", "-l", help="Only hosts whose name or a tag matches this glob."),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Hosts collected at once.")] = 16,
    out: Annotated[
        Path, typer.Option(help="Bundles go to OUT/<sweep id>/<host>/<UTC time>/.")
    ] = Path("forensics-bundles"),
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            "-f",
            help="What goes to stdout: a summary (text), the FleetReport (json), or the fleet "
            "report page (md, html).",
        ),
    ] = Format.text,
    history: Annotated[
        Path | None, typer.Option(help="History database (default OUT/history.sqlite).")
    ] = None,
    fail_on: Annotated[
        str,
        typer.Option(
            help="Exit 1 when a host has a finding of at least: warning, critical, never."
        ),
    ] = "critical",
    allow_unreachable: Annotated[
        int, typer.Option(help="Exit 3 only when more hosts than this were not collected.")
    ] = 0,
    grace: Annotated[
        str, typer.Option(help="After Ctrl-C/SIGTERM, how long hosts in flight may finish.")
    ] = "5s",
    every: Annotated[
        str | None, typer.Option(help="Sweep again every DURATION (e.g. 15m), in the foreground.")
    ] = None,
    jitter: Annotated[
        str, typer.Option(help="With --every: delay each later sweep by a random 0..DURATION.")
    ] = "0",
    lock: Annotated[
        Path | None,
        typer.Option(help="Lock file that keeps sweeps apart (default OUT/sweep.lock)."),
    ] = None,
    ticket_on: Annotated[
        str | None,
        typer.Option(
            help="Open a ticket per host and new finding at least this severe (warning, "
            "critical) at --github, --gitlab or --jira; default: the inventory's `tickets:`."
        ),
    ] = None,
    github: Annotated[str | None, typer.Option(help="Tickets: OWNER/REPO.")] = None,
    gitlab: Annotated[str | None, typer.Option(help="Tickets: GitLab project.")] = None,
    jira: Annotated[str | None, typer.Option(help="Tickets: Jira URL.")] = None,
    jira_project: Annotated[str | None, typer.Option(help="Tickets: Jira project key.")] = None,
    jira_api: Annotated[str | None, typer.Option(help="Tickets: Jira REST API 2 or 3.")] = None,
    api_url: Annotated[str | None, typer.Option(help="Tickets: GitHub/GitLab API URL.")] = None,
    label: Annotated[list[str] | None, typer.Option(help="Tickets: label (repeatable).")] = None,
    ticket_dry_run: Annotated[
        bool, typer.Option(help="Print the ticket requests instead of sending them.")
    ] = False,
    *,
    given: Given,
) -> None:
    """Collect every host of the inventory concurrently; print what the fleet shows and what
    changed since each host's previous run.

    Exit status: 0 all collected, nothing at or above --fail-on; 1 such a finding; 2 usage
    or inventory error; 3 more hosts than --allow-unreachable not collected; 4 another sweep
    holds the lock; 130/143 stopped by SIGINT/SIGTERM.

    Examples:

      forensics sweep                            # every host of ./inventory.yaml

      forensics sweep --group vast --limit 'prover-*' --format json > fleet.json

      forensics sweep --every 15m --jitter 30s   # until SIGTERM

      forensics sweep --ticket-on critical --github acme/infra   # GITHUB_TOKEN; docs/TICKETS.md
    """
    threshold = parse_fail_on(fail_on)
    if concurrency < 1:
        raise UsageError(f"--concurrency: must be at least 1, got {concurrency}")
    if allow_unreachable < 0:
        raise UsageError("--allow-unreachable: must be 0 or more")
    timeout_s = given.read(CollectOptions).timeout if "timeout" in given.values else None
    connect_timeout_s = (
        given.read(SshOptions).connect_timeout if "connect_timeout" in given.values else None
    )
    grace_s = read_duration("--grace", grace, positive=False)
    every_s = read_duration("--every", every) if every else None
    jitter_s = read_duration("--jitter", jitter, positive=False)
    loaded = load_inventory(inventory)
    hosts = [
        host.with_deadlines(timeout_s, connect_timeout_s)
        for host in loaded.select(group or (), limit or ())
    ]
    ticket_settings = (
        settings_from_options(
            on=ticket_on,
            github=github,
            gitlab=gitlab,
            jira=jira,
            jira_project=jira_project,
            jira_api=jira_api,
            api_url=api_url,
            labels=tuple(label or ()),
        )
        if ticket_on or github or gitlab or jira
        else None
    )
    bundle.check_out(out, room=max((room_needed(host.options) for host in hosts), default=0))
    with SweepLock(lock or out / "sweep.lock"):
        store = History.open(history or out / "history.sqlite", warn)
        tickets = SweepTickets(
            store, {h.name: h for h in hosts}, say, ticket_settings, ticket_dry_run
        )
        try:
            sweep = Sweep(
                hosts=hosts,
                inventory=str(inventory),
                out=out,
                history=store,
                concurrency=concurrency,
                grace_s=grace_s,
            )
            if every_s is None:
                report = _sweep_once(sweep, StopRequest(), format, interruptible=True)
                tickets.after(report)
            else:
                last = run_every(
                    lambda stop: _ticketed(tickets, _sweep_once(sweep, stop, format, False)),
                    every_s,
                    jitter_s,
                    say,
                )
                if last is None or last.interrupted_by is None:
                    raise typer.Exit(ExitStatus.ok)
                report = last
        finally:
            store.close()
    status = exit_status(report, threshold, allow_unreachable)
    if abandoned_threads():
        # Hosts given up on still run in daemon threads; letting the interpreter finalize
        # under them can abort the process (a thread killed inside native code). Everything
        # is written and closed by now, so leave at once.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    raise typer.Exit(status)


def _sweep_once(
    sweep: Sweep, stop: StopRequest, format: Format, interruptible: bool
) -> FleetReport:
    display = SweepProgress(Console(stderr=True), len(sweep.hosts)) if sys.stderr.isatty() else None
    sweep.observer = display or QuietObserver()
    handlers = {signal.SIGINT: stop.request, signal.SIGTERM: stop.request}
    with signal_handlers(handlers if interruptible else {}), display or contextlib.nullcontext():
        report = sweep.run(stop)
    _emit(report, format, compact=not interruptible)
    if report.interrupted_by is not None:
        missing = [host.name for host in report.not_collected]
        say(
            f"stopped by {report.interrupted_by}: collected {len(report.collected)} of "
            f"{len(report.hosts)} hosts; not collected: {', '.join(missing) or 'none'}"
        )
    return report


def _ticketed(tickets: SweepTickets, report: FleetReport) -> FleetReport:
    tickets.after(report)
    return report


def _emit(report: FleetReport, format: Format, compact: bool) -> None:
    if format is Format.json and compact:
        text = inert_json(report.model_dump_json())
    else:
        text = render_fleet(fleet_summary(report), format)
    sys.stdout.write(text.rstrip("\n") + "\n")
    if format is Format.text:
        sys.stdout.write(f"fleet report: {Path(report.directory) / FLEET_REPORT}\n")
    sys.stdout.flush()
