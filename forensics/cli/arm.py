"""``forensics arm``: the flight recorder. Wait on the host, cheaply, and collect the
instant the focus process dies, with the minutes before it (``forensics/watch/recorder.py``).

One host (TARGET, as ``collect`` takes it) or many (``--inventory``: one connection and one
thread each, a live status line per host on a terminal, each bundle written as it fires).
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from forensics.cli.collect import probe_names
from forensics.cli.messages import say
from forensics.cli.options import Given, declared_options, read_duration
from forensics.cli.ticket_options import TicketDryRun, chosen_tickets
from forensics.cli.watch import TargetArgument
from forensics.core.errors import ForensicsError, Interrupted, UsageError
from forensics.core.exit_status import ExitStatus
from forensics.core.models import CollectOptions, SshOptions, Target
from forensics.core.report_format import Format
from forensics.core.ticket_settings import TicketSettings
from forensics.watch.event_kinds import EVENT_KINDS

if TYPE_CHECKING:
    # The recorder, SSH, the probes, the reports and rich load when the command runs,
    # not for --help.
    from rich.table import Table

    from forensics.tickets.fired import FiredTickets
    from forensics.watch.recorder import ArmSettings, Fired

# Told of each bundle as it is written, after it is printed (the tickets).
OnFired = Callable[[Target, "Fired"], None]

MIN_EVERY_S = 0.1


class Terminated(Interrupted):
    exit_code = ExitStatus.terminated


@declared_options(SshOptions, TicketSettings)
def arm_command(
    target: TargetArgument = "local",
    focus: Annotated[
        str | None,
        typer.Option(help="Regex on process name or command line: the process to guard."),
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option("--for", help="Stay armed this long (default: until Ctrl-C or an event)."),
    ] = None,
    every: Annotated[str, typer.Option(help="Sample interval: 1s, 500ms.")] = "1s",
    keep: Annotated[str, typer.Option(help="Samples kept for the bundle: the last 5m.")] = "5m",
    on: Annotated[
        list[str] | None,
        typer.Option(help="Fire on (repeatable; default all): " + ", ".join(EVENT_KINDS) + "."),
    ] = None,
    stuck_after: Annotated[
        str, typer.Option(help="`stuck`: a focus thread in state D this long.")
    ] = "60s",
    available: Annotated[
        str | None,
        typer.Option(help="`memory`: fire when MemAvailable meets this, e.g. '<10GiB'."),
    ] = None,
    keep_armed: Annotated[
        bool, typer.Option("--keep-armed", help="After a bundle, re-arm until --for ends.")
    ] = False,
    out: Annotated[Path, typer.Option(help="Where bundles go: OUT/<target>/<UTC time>/.")] = Path(
        "forensics-bundles"
    ),
    format: Annotated[
        Format, typer.Option("--format", "-f", help="How each triggered report is printed.")
    ] = Format.text,
    inventory: Annotated[
        Path | None, typer.Option(help="Arm every host of this inventory instead of TARGET.")
    ] = None,
    group: Annotated[list[str] | None, typer.Option(help="Only this inventory group.")] = None,
    limit: Annotated[list[str] | None, typer.Option(help="Only hosts or tags matching.")] = None,
    timeout: Annotated[float, typer.Option(help="Deadline in seconds for a collection.")] = 120.0,
    probe: Annotated[
        list[str] | None,
        typer.Option(
            help="Collect only this probe (repeatable): " + ", ".join(probe_names()) + "."
        ),
    ] = None,
    snapshot_gap: Annotated[
        float, typer.Option(help="Seconds between the collection's two process snapshots.")
    ] = 2.0,
    ticket_dry_run: TicketDryRun = False,
    *,
    given: Given,
) -> None:
    """Arm the flight recorder: sample the focus process over one SSH connection and, the
    moment it exits, turns zombie, is OOM-killed, gets stuck in D, memory runs low or it
    restarts, collect a full bundle on the same connection, with the samples before it.

    Examples:

      forensics arm gpu-a --focus cuzk --for 24h

      forensics arm root@ssh6.vast.ai:17008 --focus cuzk --on exit --on oom --keep 10m

      forensics arm --inventory inventory.yaml --group provers --focus cuzk --keep-armed --for 7d

      forensics arm gpu-a --focus cuzk --ticket-on critical --jira https://acme.atlassian.net \
--jira-project OPS

    With --ticket-on and a tracker (else, with --inventory, each group's `tickets:`), each
    bundle is filed as it is written: one ticket per host and finding at least that severe,
    with the redacted pack and the events that fired; the same finding firing again is a
    comment on its ticket (docs/TICKETS.md).

    Exit status: 0 --for ended and nothing fired; 1 it fired (a bundle was written); 2 usage
    error (a missing tracker token included); 3 could not connect at the start; 4 it fired
    and the bundle was written, but a ticket could not be filed (one line on stderr names
    the host and the tracker); 130/143 stopped by SIGINT/SIGTERM.
    """
    every_s = read_duration("--every", every)
    if every_s < MIN_EVERY_S:
        raise UsageError(f"--every must be at least {MIN_EVERY_S:g}s")
    for_s = read_duration("--for", duration) if duration is not None else None
    kinds = frozenset(on or EVENT_KINDS)
    unknown = sorted(kinds - set(EVENT_KINDS))
    if unknown:
        raise UsageError(f"--on {unknown[0]!r}: choose from {', '.join(EVENT_KINDS)}")
    if timeout <= 0 or not 0 <= snapshot_gap <= 60:
        raise UsageError("--timeout must be positive and --snapshot-gap within 0-60 s")
    # Imported once the plain checks passed: a mistyped option is answered at once.
    from forensics.core.focus import focus_problem
    from forensics.core.targets import parse_target
    from forensics.fleet.inventory import load_inventory
    from forensics.probes import PROBES
    from forensics.remote import bundle
    from forensics.watch.condition import parse_condition
    from forensics.watch.recorder import ArmSettings

    if focus is not None and (problem := focus_problem(focus)) is not None:
        raise UsageError(f"--focus: {problem}")
    known = {p.name for p in PROBES}
    if bad := [name for name in probe or () if name not in known]:
        raise UsageError(f"unknown probe {bad[0]!r}")
    armed = ArmSettings(
        options=CollectOptions(),
        out=out,
        every_s=every_s,
        keep_s=read_duration("--keep", keep),
        for_s=for_s,
        kinds=kinds,
        stuck_after_s=read_duration("--stuck-after", stuck_after),
        available=parse_condition("available", available) if available else None,
        keep_armed=keep_armed,
        timeout_s=timeout,
    )
    command_line_tickets = chosen_tickets(given)
    history: str | None = None
    if inventory is not None:
        loaded = load_inventory(inventory)
        history = loaded.history
        hosts = [
            (host.target, host.options, command_line_tickets or host.tickets)
            for host in loaded.select(group or (), limit or ())
        ]
    else:
        parsed = parse_target(target, given.read(SshOptions))
        hosts = [(parsed, CollectOptions(), command_line_tickets)]
    ticketed = {host.name: chosen for host, _, chosen in hosts if chosen is not None}
    wanted = {"focus": focus, "probes": tuple(probe or ()), "snapshot_gap": snapshot_gap}
    settings = [(host, _for_host(armed, options, wanted)) for host, options, _ in hosts]
    for host, chosen in settings:
        if chosen.options.focus is None and kinds & {"exit", "zombie", "stuck", "new-focus"}:
            raise UsageError(
                f"{host.name}: --focus is needed to watch a process (or --on oom / memory only)"
            )
    bundle.check_out(out, room=16 << 20)
    tickets = _tickets(ticketed, history, out, ticket_dry_run)

    def file(target: Target, event: Fired) -> None:
        if tickets is not None and target.name in ticketed:
            tickets.submit(target.name, ticketed[target.name], event.report)

    with _signals():
        try:
            fired = (
                _arm_one(*settings[0], format, file)
                if inventory is None
                else _arm_many(settings, format, file)
            )
            if tickets is not None:
                tickets.finish()
        except Interrupted:
            if tickets is not None:
                tickets.abandon()
            raise
    if tickets is not None and tickets.failed:
        raise typer.Exit(ExitStatus.tracker_refused)
    raise typer.Exit(ExitStatus.findings if fired else ExitStatus.ok)


def _tickets(
    ticketed: dict[str, TicketSettings], history: str | None, out: Path, dry_run: bool
) -> FiredTickets | None:
    """The ticket filer when any host has a tracker: its tokens checked and the history
    (where tickets are remembered, as a sweep's are) opened before anything is armed."""
    if not ticketed:
        return None
    from forensics.fleet.history_location import history_location
    from forensics.tickets.fired import FiredTickets

    tickets = FiredTickets(history_location(None, history, out), say, dry_run=dry_run)
    tickets.start(set(ticketed.values()))
    return tickets


def _for_host(armed: ArmSettings, options: CollectOptions, wanted: dict[str, Any]) -> ArmSettings:
    """The recorder's settings for one host: its own collection options (the inventory's),
    with the command line's --focus and --probe where given, and its --snapshot-gap."""
    chosen = options.model_copy(
        update={
            "focus": wanted["focus"] or options.focus,
            "probes": wanted["probes"] or options.probes,
            "snapshot_gap": wanted["snapshot_gap"],
            "timeout": armed.timeout_s,
        }
    )
    return dataclasses.replace(armed, options=chosen)


def _arm_one(target: Target, settings: ArmSettings, format: Format, also: OnFired) -> bool:
    from forensics.reports import render_host
    from forensics.watch.recorder import Recorder

    def fired(event: Fired) -> None:
        _announce(target, event)
        sys.stdout.write(render_host(event.report, format).rstrip("\n") + "\n")
        sys.stdout.flush()
        also(target, event)

    say(f"{target.name}: arming ({_describe(settings)})")
    recorder = Recorder(
        target, settings, say, on_fired=fired, on_status=lambda text: say(f"{target.name}: {text}")
    )
    outcome = recorder.run()
    if not outcome.fired:
        say(f"{target.name}: --for ended; nothing fired")
    return bool(outcome.fired)


def _announce(target: Target, event: Fired) -> None:
    from forensics.core.escaping import one_line

    what = "; ".join(one_line(f"{e.kind}: {e.detail}", 160) for e in event.events)
    say(f"{target.name}: fired ({what}); bundle in {event.latency_s:.2f}s: {event.report.bundle}")


def _describe(settings: ArmSettings) -> str:
    from forensics.core.units import describe_duration

    focus = settings.options.focus
    until = (
        f"for {describe_duration(settings.for_s, tenths=True)}"
        if settings.for_s
        else "until Ctrl-C"
    )
    return (
        f"focus {focus!r}, every {describe_duration(settings.every_s, tenths=True)}, on "
        f"{', '.join(sorted(settings.kinds))}, {until}"
    )


def _arm_many(hosts: list[tuple[Target, ArmSettings]], format: Format, also: OnFired) -> bool:
    from rich.console import Console
    from rich.live import Live

    from forensics.core.escaping import one_line
    from forensics.reports import render_host
    from forensics.watch.recorder import Recorder

    status = {target.name: "connecting" for target, _ in hosts}
    fired_any = threading.Event()
    stop = threading.Event()
    lock = threading.Lock()
    console = Console(stderr=True)

    def run(target: Target, settings: ArmSettings) -> None:
        def set_status(text: str) -> None:
            with lock:
                status[target.name] = one_line(text, 120)
            if not console.is_terminal:
                # No live table in a log or a pipe: each change is a line of its own.
                say(f"{target.name}: {text}")

        def fired(event: Fired) -> None:
            fired_any.set()
            set_status(f"fired; bundle {event.report.bundle}")
            with lock:
                _announce(target, event)
                if format is Format.json:
                    sys.stdout.write(render_host(event.report, format).rstrip("\n") + "\n")
                sys.stdout.flush()
            also(target, event)

        try:
            Recorder(target, settings, say, fired, set_status, stop=stop).run()
            if not fired_any.is_set():
                set_status("--for ended; nothing fired")
        except ForensicsError as error:
            set_status(f"not armed: {error.message}")
            say(f"{target.name}: {error.message}")

    threads = [
        threading.Thread(target=run, args=host, name=f"arm {host[0].name}", daemon=True)
        for host in hosts
    ]
    for thread in threads:
        thread.start()
    live = Live(_table(status, lock), console=console, auto_refresh=False)
    with live if console.is_terminal else contextlib.nullcontext():
        try:
            while any(thread.is_alive() for thread in threads):
                for thread in threads:
                    thread.join(0.5)
                if console.is_terminal:
                    live.update(_table(status, lock), refresh=True)
        finally:
            stop.set()
            for thread in threads:
                thread.join(5)
    return fired_any.is_set()


def _table(status: dict[str, str], lock: threading.Lock) -> Table:
    from rich.table import Table
    from rich.text import Text

    from forensics.core.escaping import one_line

    table = Table(box=None, show_header=False)
    with lock:
        for name, text in status.items():
            table.add_row(Text(one_line(name)), Text(text))  # Text: host text is no markup
    return table


@contextlib.contextmanager
def _signals() -> Iterator[None]:
    def terminate(number: int, frame: FrameType | None) -> None:
        raise Terminated("terminated (SIGTERM); the recorder stopped, nothing left on the host")

    def interrupt(number: int, frame: FrameType | None) -> None:
        raise Interrupted("interrupted (SIGINT); the recorder stopped, nothing left on the host")

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, terminate),
        signal.SIGINT: signal.signal(signal.SIGINT, interrupt),
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
