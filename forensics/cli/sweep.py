"""``forensics sweep``: collect the inventory's hosts, once or on a schedule."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forensics.cli.fail_on import parse_fail_on
from forensics.cli.messages import say, warn
from forensics.cli.options import Given, declared_options, read_duration
from forensics.cli.ticket_options import TicketDryRun, chosen_tickets
from forensics.core.errors import UsageError
from forensics.core.exit_status import ExitStatus
from forensics.core.levels import Severity
from forensics.core.models import CollectOptions, SshOptions
from forensics.core.report_format import Format
from forensics.core.ticket_settings import TicketSettings
from forensics.fleet.shard import Shard

if TYPE_CHECKING:
    # SSH, the history stores, the trackers and the reports load when a sweep runs, in
    # the command's body: not for --help (docs/ARCHITECTURE.md, "Start-up").
    from forensics.fleet.metrics import SweepMetrics
    from forensics.fleet.report import FleetReport
    from forensics.fleet.store import HistoryStore
    from forensics.fleet.sweep import StopRequest, Sweep
    from forensics.tickets.sweep import SweepTickets


def _fitting(requested: int) -> int:
    from forensics.fleet.concurrency import fitting

    allowed = fitting(requested)
    if allowed < requested:
        warn(
            f"--concurrency {requested}: the open-file limit (ulimit -n) holds {allowed} hosts "
            "at once; collecting that many"
        )
    return allowed


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
    TicketSettings,
    only=("connect_timeout", "timeout", *TicketSettings.model_fields),
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
    concurrency: Annotated[
        int,
        typer.Option(
            help="Hosts collected at once. The default, 64, is where a 64-host sweep stopped "
            "getting faster on a 2-core client (16: twice as slow); fewer are run when the "
            "open-file limit cannot hold that many (8 descriptors a host)."
        ),
    ] = 64,
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
        str | None,
        typer.Option(
            help="History: a SQLite file or a postgresql:// URL (default: $FORENSICS_HISTORY_URL, "
            "the inventory's history:, else OUT/history.sqlite)."
        ),
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
        typer.Option(
            help="Lock file that keeps sweeps apart (default OUT/sweep.lock, OUT/sweep-K-of-N.lock "
            "with --shard); with a PostgreSQL history a database lock is used instead."
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            help="K/N: only the hosts whose name hashes to shard K of N (K from 0, as "
            "$JOB_COMPLETION_INDEX)."
        ),
    ] = None,
    metrics_file: Annotated[
        Path | None,
        typer.Option(help="Write Prometheus metrics here after each sweep (textfile format)."),
    ] = None,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics at /metrics on this port.")
    ] = None,
    metrics_address: Annotated[
        str, typer.Option(help="Address --metrics-port listens on.")
    ] = "127.0.0.1",
    ticket_dry_run: TicketDryRun = False,
    *,
    given: Given,
) -> None:
    """Collect every host of the inventory concurrently; print what the fleet shows and what
    changed since each host's previous run.

    Exit status: 0 all collected, nothing at or above --fail-on; 1 such a finding; 2 usage
    or inventory error; 3 more hosts than --allow-unreachable not collected; 4 another sweep
    holds the lock (the same shard's, with --shard); 130/143 stopped by SIGINT/SIGTERM.

    Examples:

      forensics sweep                            # every host of ./inventory.yaml

      forensics sweep --group vast --limit 'prover-*' --format json > fleet.json

      forensics sweep --every 15m --jitter 30s   # until SIGTERM

      forensics sweep --shard 2/8 --history postgresql://forensics@db/fleet --metrics-file \
/var/lib/node_exporter/textfile/forensics.prom

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
    chosen = Shard.parse(shard) if shard is not None else None
    if metrics_port is not None and not 0 < metrics_port < 65536:
        raise UsageError(f"--metrics-port: must be 1..65535, got {metrics_port}")
    ticket_settings = chosen_tickets(given)
    # The inventory, SSH, the history stores and the trackers load once the options are
    # read, so --help and a usage error need none of them (docs/ARCHITECTURE.md, "Start-up").
    from forensics.collect import room_needed
    from forensics.fleet.history_location import history_location
    from forensics.fleet.inventory import load_inventory
    from forensics.fleet.schedule import run_every
    from forensics.fleet.sweep import StopRequest, Sweep, abandoned_threads
    from forensics.remote import bundle

    loaded = load_inventory(inventory)
    location = history_location(history, loaded.history, out)
    hosts = [
        host.with_deadlines(timeout_s, connect_timeout_s)
        for host in loaded.select(group or (), limit or ())
        if chosen is None or chosen.holds(host.name)
    ]
    bundle.check_out(out, room=max((room_needed(host.options) for host in hosts), default=0))
    # Prometheus, the trackers and PostgreSQL load only for a sweep that uses them: they
    # are a tenth of a sweep's fixed client CPU (bench/RESULTS.md, "Sweep client cost").
    metrics = None
    if metrics_port is not None or metrics_file is not None:
        from forensics.fleet.metrics import SweepMetrics

        metrics = SweepMetrics(str(chosen) if chosen else None)
    if metrics is not None and metrics_port is not None:
        _serve_metrics(metrics, metrics_port, metrics_address)
    with contextlib.ExitStack() as held:
        store = _locked_history(held, location, chosen, lock or out / _lock_name(chosen))
        sweep = Sweep(
            hosts=hosts,
            inventory=str(inventory),
            out=out,
            history=store,
            concurrency=_fitting(concurrency),
            grace_s=grace_s,
        )
        tickets = None
        if ticket_settings is not None or any(host.tickets for host in hosts):
            from forensics.tickets.sweep import SweepTickets

            tickets = SweepTickets(
                store, {h.name: h for h in hosts}, say, ticket_settings, ticket_dry_run
            )
        once = _Once(sweep, format, metrics, metrics_file, tickets)
        if every_s is None:
            report = once(StopRequest(), interruptible=True)
        else:
            last = run_every(lambda stop: once(stop, interruptible=False), every_s, jitter_s, say)
            if last is None or last.interrupted_by is None:
                raise typer.Exit(ExitStatus.ok)
            report = last
    status = exit_status(report, threshold, allow_unreachable)
    if abandoned_threads():
        # Hosts given up on still run in daemon threads; letting the interpreter finalize
        # under them can abort the process (a thread killed inside native code). Everything
        # is written and closed by now, so leave at once.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    raise typer.Exit(status)


def _lock_name(shard: Shard | None) -> str:
    return "sweep.lock" if shard is None else f"sweep-{shard.index}-of-{shard.count}.lock"


def _locked_history(
    held: contextlib.ExitStack, location: str | Path, shard: Shard | None, lock_file: Path
) -> HistoryStore:
    """The history, opened under the lock that keeps collectors of one shard apart: the
    database's advisory lock for a PostgreSQL history (all hosts: shard 0/1), else the lock
    file, taken before the SQLite file is opened (and perhaps rebuilt)."""
    from forensics.fleet.history_location import is_postgres, open_history
    from forensics.fleet.lock import SweepLock

    if not is_postgres(location):
        held.enter_context(SweepLock(lock_file))
        store: HistoryStore = open_history(location, warn)
        held.callback(store.close)
        return store
    from forensics.fleet.store_postgres import PostgresHistory

    store = open_history(location, warn)
    held.callback(store.close)
    if isinstance(store, PostgresHistory) and store.available:
        held.enter_context(store.shard_lock(str(shard or Shard(0, 1))))
    else:
        held.enter_context(SweepLock(lock_file))
    return store


def _serve_metrics(metrics: SweepMetrics, port: int, address: str) -> None:
    from forensics.fleet.metrics import serve

    try:
        serve(metrics, port, address)
    except OSError as error:
        raise UsageError(
            f"--metrics-port {port}: cannot listen on {address}:{port} ({error.strerror})"
        ) from error


@dataclass
class _Once:
    """One sweep: run it, print it, and publish its metrics."""

    sweep: Sweep
    format: Format
    metrics: SweepMetrics | None
    metrics_file: Path | None
    tickets: SweepTickets | None

    def __call__(self, stop: StopRequest, interruptible: bool) -> FleetReport:
        if self.metrics is not None:
            self.metrics.sweep_started()
        report = _sweep_once(self.sweep, stop, self.format, interruptible)
        if self.metrics is not None:
            self.metrics.update(report)
            if self.metrics_file is not None:
                from forensics.fleet.metrics import write_textfile

                write_textfile(self.metrics_file, self.metrics)
        if self.tickets is not None:
            self.tickets.after(report)
        return report


def _sweep_once(
    sweep: Sweep, stop: StopRequest, format: Format, interruptible: bool
) -> FleetReport:
    from rich.console import Console

    from forensics.fleet.progress import SweepProgress
    from forensics.fleet.sweep import QuietObserver, signal_handlers

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


def _emit(report: FleetReport, format: Format, compact: bool) -> None:
    from forensics.core.escaping import inert_json
    from forensics.fleet.sweep import FLEET_REPORT
    from forensics.reports import render_fleet
    from forensics.reports.fleet import fleet_summary

    if format is Format.json and compact:
        text = inert_json(report.model_dump_json())
    else:
        text = render_fleet(fleet_summary(report), format)
    sys.stdout.write(text.rstrip("\n") + "\n")
    if format is Format.text:
        sys.stdout.write(f"fleet report: {Path(report.directory) / FLEET_REPORT}\n")
    sys.stdout.flush()
