"""``forensics fleet-report``: one fleet report across all shards' latest runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli.messages import warn
from forensics.cli.options import read_duration
from forensics.cli.report import write_atomically
from forensics.core.report_format import Format


def fleet_report_command(
    since: Annotated[
        str, typer.Option(help="Hosts whose latest run started within this long (e.g. 20m).")
    ] = "1h",
    history: Annotated[
        str | None,
        typer.Option(
            help="History: a SQLite file or a postgresql:// URL (default: "
            "$FORENSICS_HISTORY_URL, the inventory's history:, else OUT/history.sqlite)."
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="The sweeps' output directory.")] = Path(
        "forensics-bundles"
    ),
    inventory: Annotated[
        Path | None,
        typer.Option(help="Inventory for groups, tags and addresses (default ./inventory.yaml)."),
    ] = None,
    format: Annotated[
        Format, typer.Option("--format", "-f", help="text, json, md or html.")
    ] = Format.text,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here (replaced atomically) instead of stdout."),
    ] = None,
) -> None:
    """A fleet report built from every host's latest run in the history, whichever shard or
    collector made it: what `sweep` prints, across all shards.

    Example: forensics fleet-report --since 20m --history postgresql://forensics@db/fleet
    -f html -o fleet.html
    """
    since_s = read_duration("--since", since)
    from forensics.fleet.history_location import history_location, open_history_read_only
    from forensics.fleet.inventory import load_inventory
    from forensics.fleet.latest import latest_fleet_report
    from forensics.reports import render_fleet
    from forensics.reports.fleet import fleet_summary

    chosen = inventory or Path("inventory.yaml")
    loaded = load_inventory(chosen) if inventory is not None or chosen.exists() else None
    location = history_location(history, loaded.history if loaded else None, out)
    store = open_history_read_only(location)
    try:
        report = latest_fleet_report(
            store,
            since_s,
            str(chosen) if loaded else "",
            {host.name: host for host in loaded.hosts} if loaded else {},
            warn,
        )
    finally:
        store.close()
    if not report.hosts:
        warn(f"no runs in {report.history} started within the last {since}")
    text = render_fleet(fleet_summary(report), format).rstrip("\n") + "\n"
    if output is None or str(output) == "-":
        sys.stdout.write(text)
    else:
        write_atomically(output, text)
