"""``forensics analyze``: re-judge a bundle offline with today's probes and rules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from forensics.cli.fail_on import parse_fail_on
from forensics.core.report_format import Format


def analyze_command(
    bundle_path: Annotated[Path, typer.Argument(metavar="BUNDLE", help="A bundle directory.")],
    format: Annotated[Format, typer.Option("--format", "-f")] = Format.text,
    fail_on: Annotated[str, typer.Option(help="warning, critical or never.")] = "critical",
) -> None:
    """Re-parse and re-judge a bundle offline with today's probes and rules.

    Example: forensics analyze forensics-bundles/gpu-a/2026-11-29T20-15-03Z --format json
    """
    threshold = parse_fail_on(fail_on)
    from forensics.cli.host_output import exit_status, print_report
    from forensics.judge.analysis import analyze
    from forensics.remote import bundle

    manifest, captures = bundle.load(bundle_path)
    report = analyze(manifest, captures, bundle=str(bundle_path))
    print_report(report, format)
    raise typer.Exit(exit_status(report, threshold))
