"""``forensics report``: turn a bundle (or a saved JSON report) into a report file for a
ticket (Markdown), a browser or a printer (HTML), or a script (JSON)."""

from __future__ import annotations

import json
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forensics.core.errors import BundleError, UsageError
from forensics.core.report_format import Format

if TYPE_CHECKING:
    from forensics.fleet.report import FleetReport
    from forensics.judge.host_report import HostReport

MAX_REPORT_BYTES = 256 * 1024 * 1024


def report_command(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="BUNDLE",
            help="A bundle directory (re-judged with today's rules), or a report JSON file "
            "as `collect --format json` prints it.",
        ),
    ],
    format: Annotated[Format, typer.Option("--format", "-f", help="md, html, json or text.")] = (
        Format.md
    ),
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here (replaced atomically) instead of stdout."),
    ] = None,
) -> None:
    """Render a host report from a bundle, or a sweep's fleet report from its fleet.json.

    Examples:

      forensics report forensics-bundles/gpu-a/2026-11-29T20-15-03Z -o gpu-a.md

      forensics report forensics-bundles/gpu-a/2026-11-29T20-15-03Z -f html -o gpu-a.html

      forensics report forensics-bundles/sweep-2026-11-29T20-15-00Z/fleet.json -f html
    """
    from forensics.fleet.report import FleetReport
    from forensics.reports import render_fleet, render_host
    from forensics.reports.fleet import fleet_summary

    loaded = load_report(source)
    rendered = (
        render_fleet(fleet_summary(loaded), format)
        if isinstance(loaded, FleetReport)
        else render_host(loaded, format)
    )
    text = rendered.rstrip("\n") + "\n"
    if output is None or str(output) == "-":
        sys.stdout.write(text)
    else:
        write_atomically(output, text)


def load_report(source: Path) -> HostReport | FleetReport:
    """A host report (judged again from a bundle, or as saved) or a saved fleet report
    (one written before fleet reports kept summaries is read with each host summarised)."""
    from pydantic import ValidationError

    from forensics.core.files import read_bounded
    from forensics.fleet.report import FleetReport
    from forensics.fleet.summary import upgraded
    from forensics.judge.analysis import analyze
    from forensics.judge.host_report import HostReport
    from forensics.remote import bundle

    if not source.exists():
        raise BundleError(f"{source}: does not exist; give a bundle directory or a JSON report")
    if source.is_dir():
        manifest, captures = bundle.load(source)
        return analyze(manifest, captures, bundle=str(source))
    try:
        data = read_bounded(source, MAX_REPORT_BYTES)
    except OSError as error:
        raise BundleError(f"{source}: cannot read ({error.strerror})") from error
    except ValueError as error:
        raise BundleError(f"{source}: not a forensics JSON report ({error})") from error
    if b'"sweep_id"' in data:
        try:
            return FleetReport.model_validate(upgraded(json.loads(data)))
        except (ValueError, ValidationError):
            pass
    try:
        return HostReport.model_validate_json(data)
    except ValidationError as error:
        first = error.errors(include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BundleError(
            f"{source}: neither a bundle directory nor a forensics JSON report "
            f"({where + ': ' if where else ''}{first['msg']})"
        ) from error


def write_atomically(path: Path, text: str) -> None:
    """Write beside the target, then rename: a reader never sees half a report.

    Only a regular file is ever replaced: a device or a pipe (``-o /dev/stdout``) is
    written into as a shell redirection would, never renamed over, and a symlink is
    followed to the file it names.
    """
    path = path.resolve() if path.is_symlink() else path
    if path.exists() and not path.is_file():
        if path.is_dir():
            raise UsageError(f"{path}: is a directory; name a file for the report")
        try:
            with path.open("w", encoding="utf-8") as stream:
                stream.write(text)
        except OSError as error:
            raise UsageError(f"{path}: cannot write the report ({error.strerror})") from error
        return
    aside = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    try:
        aside.write_text(text, encoding="utf-8")
        os.replace(aside, path)
    except OSError as error:
        aside.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write the report ({error.strerror})") from error
