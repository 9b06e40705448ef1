"""The ``forensics`` command line. Every failure the operator can act on ends in one line
on stderr and a documented exit status; no traceback reaches the terminal."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forensics import __version__
from forensics.cli import arm, explain, guard, lint_script
from forensics.cli import pack as pack_command
from forensics.cli import report as report_command
from forensics.cli import ticket as ticket_command
from forensics.cli import verify as verify_command
from forensics.cli import watch as memory_watch
from forensics.cli.fail_on import parse_fail_on
from forensics.cli.fleet_report import fleet_report_command
from forensics.cli.history import diff_command, history_command
from forensics.cli.inventory import app as inventory_app
from forensics.cli.sweep import sweep_command
from forensics.core.errors import UsageError
from forensics.core.exit_status import ExitStatus
from forensics.core.levels import Severity
from forensics.core.report_format import Format

if TYPE_CHECKING:
    from forensics.judge.host_report import HostReport

EXIT_CODES_HELP = """
Exit status: 0 collected, no finding at or above --fail-on; 1 collected with such a finding;
2 usage or configuration error; 3 could not collect (unreachable, auth refused, host key
unknown or changed, deadline hit before anything came back); 130 interrupted (SIGINT).
"""

app = typer.Typer(
    name="forensics",
    help="Remote forensic diagnostics for GPU hosts: was it OOM-killed, who are the zombies, "
    "what did the kernel and the GPU say. One SSH round trip per host; raw evidence kept."
    + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(asked: bool) -> None:
    if asked:
        sys.stdout.write(f"forensics {__version__}\n")
        raise typer.Exit()


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    pass


def _probe_names() -> list[str]:
    """The names of the probes that run on the host, without importing them: each one's
    host shell is ``probes/<name>.sh`` (forensics/remote/host_script.py), so ``--help``
    lists them from the directory and stays instant. (The recorder, whose sections run on
    the client, has none; ``arm`` is its command.)"""
    return sorted(path.stem for path in (Path(__file__).parent.parent / "probes").glob("*.sh"))


def _check_regex(focus: str | None) -> None:
    from forensics.core.focus import focus_problem

    problem = focus_problem(focus) if focus is not None else None
    if problem is not None:
        raise UsageError(f"--focus: {problem}")


def _exit_status(report: HostReport, fail_on: Severity | None) -> ExitStatus:
    if fail_on is None:
        return ExitStatus.ok
    worst = report.worst
    return (
        ExitStatus.findings if worst is not None and worst.rank >= fail_on.rank else ExitStatus.ok
    )


def _emit(report: HostReport, format: Format) -> None:
    from forensics.reports import render_host

    sys.stdout.write(render_host(report, format).rstrip("\n") + "\n")


@app.command("collect")
def collect_command(
    target: Annotated[
        str,
        typer.Argument(
            help="'local' (this machine, no SSH), [user@]host[:port], or an SSH config alias."
        ),
    ] = "local",
    port: Annotated[int | None, typer.Option(help="SSH port (overrides host:port).")] = None,
    user: Annotated[str | None, typer.Option(help="SSH user (overrides user@).")] = None,
    identity: Annotated[
        Path | None, typer.Option("--identity", "-i", help="Private key file.")
    ] = None,
    ssh_config: Annotated[
        Path | None,
        typer.Option(help="SSH config file (default ~/.ssh/config when it exists; ProxyJump)."),
    ] = None,
    known_hosts: Annotated[
        Path | None, typer.Option(help="known_hosts file (default ~/.ssh/known_hosts).")
    ] = None,
    accept_new_host_key: Annotated[
        bool,
        typer.Option(
            "--accept-new-host-key",
            help="Trust an unknown host key on first use and add it to known_hosts "
            "(recorded in the manifest). A changed key is always refused.",
        ),
    ] = False,
    connect_timeout: Annotated[float, typer.Option(help="Seconds to establish SSH.")] = 10.0,
    sudo: Annotated[
        bool,
        typer.Option(
            "--sudo",
            help="Run the script as root through `sudo -n /bin/sh` (needs a NOPASSWD rule; "
            "never asks a password).",
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option(help="Deadline in seconds for the whole collection.")
    ] = 120.0,
    out: Annotated[Path, typer.Option(help="Where bundles go: OUT/<target>/<UTC time>/.")] = Path(
        "forensics-bundles"
    ),
    format: Annotated[
        Format, typer.Option("--format", "-f", help="What goes to stdout.")
    ] = Format.text,
    probe: Annotated[
        list[str] | None,
        typer.Option(help="Run only this probe (repeatable): " + ", ".join(_probe_names()) + "."),
    ] = None,
    focus: Annotated[
        str | None,
        typer.Option(help="Regex on process name or command line: the process in question."),
    ] = None,
    log: Annotated[
        list[str] | None,
        typer.Option(help="Log file glob to read on the host, absolute or ~/ (repeatable)."),
    ] = None,
    expect_log: Annotated[
        list[str] | None,
        typer.Option(help="Log path that should exist on the host (repeatable)."),
    ] = None,
    log_lines: Annotated[int, typer.Option(help="Last lines kept per log (1-1000).")] = 50,
    gpu_timeout: Annotated[
        float, typer.Option(help="Seconds nvidia-smi may take before it counts as hung.")
    ] = 30.0,
    snapshot_gap: Annotated[
        float, typer.Option(help="Seconds between the two process-table snapshots (0-60).")
    ] = 2.0,
    fail_on: Annotated[
        str, typer.Option(help="Exit 1 when a finding is at least: warning, critical, never.")
    ] = "critical",
    memory_threshold: Annotated[
        list[str] | None,
        typer.Option(
            "--threshold",
            help="Memory finding threshold NAME=VALUE, e.g. near_limit_warning_percent=85.",
        ),
    ] = None,
    script: Annotated[
        list[str] | None,
        typer.Option(
            help="A shell script on the host to read and check for masked exit statuses "
            "(repeatable; relative paths start at the login directory)."
        ),
    ] = None,
    explain_ssh: Annotated[
        bool,
        typer.Option(
            "--explain-ssh",
            help="Print the SSH settings the target resolves to (as `ssh -G` does, plus the "
            "keys, known_hosts files and jump hosts used) and exit without connecting.",
        ),
    ] = False,
) -> None:
    """Collect one host into an evidence bundle and print what it shows.

    Examples:

      forensics collect                                  # this machine, no SSH

      forensics collect root@ssh6.vast.ai:17008 -i ~/.ssh/id_ed25519

      forensics collect gpu-a --focus cuzk --format json > report.json

      forensics collect gpu-a --focus cuzk --log '/work/bench*.log' --expect-log /var/log/cuzk.log

    Exit status: 0 collected, nothing at or above --fail-on; 1 collected with such a finding;
    2 usage error; 3 could not collect (unreachable, auth or sudo refused, host key unknown or
    changed, deadline before any section finished).
    """
    # SSH, the probes and the reports load only when a collection runs (docs/ARCHITECTURE.md,
    # "Start-up").
    from forensics.collect import collect
    from forensics.core.log_options import log_options
    from forensics.core.models import CollectOptions
    from forensics.core.targets import parse_target
    from forensics.core.thresholds import parse_thresholds
    from forensics.remote.transport import explain as explain_ssh_settings

    threshold = parse_fail_on(fail_on)
    if timeout <= 0 or connect_timeout <= 0:
        raise UsageError("--timeout and --connect-timeout must be positive")
    parsed = parse_target(
        target,
        user=user,
        port=port,
        identity=str(identity) if identity else None,
        ssh_config=str(ssh_config) if ssh_config else None,
        known_hosts=str(known_hosts) if known_hosts else None,
        accept_new_host_key=accept_new_host_key,
        connect_timeout=connect_timeout,
        sudo=sudo,
    )
    if explain_ssh:
        if parsed.is_local:
            raise UsageError("--explain-ssh: 'local' uses no SSH")
        sys.stdout.write(explain_ssh_settings(parsed))
        raise typer.Exit(ExitStatus.ok)
    if not 0 <= snapshot_gap <= 60:
        raise UsageError("--snapshot-gap must be between 0 and 60 seconds")
    _check_regex(focus)
    scripts = [os.path.abspath(p) if parsed.is_local else p for p in script or ()]
    options = log_options(
        CollectOptions(
            focus=focus,
            probes=tuple(probe or ()),
            snapshot_gap_s=snapshot_gap,
            memory_thresholds=parse_thresholds(memory_threshold or []),
            scripts=tuple(scripts),
        ),
        log or [],
        expect_log or [],
        log_lines,
        gpu_timeout,
    )
    report = collect(parsed, options, out, timeout)
    _emit(report, format)
    raise typer.Exit(_exit_status(report, threshold))


@app.command("analyze")
def analyze_command(
    bundle_path: Annotated[Path, typer.Argument(metavar="BUNDLE", help="A bundle directory.")],
    format: Annotated[Format, typer.Option("--format", "-f")] = Format.text,
    fail_on: Annotated[str, typer.Option(help="warning, critical or never.")] = "critical",
) -> None:
    """Re-parse and re-judge a bundle offline with today's probes and rules.

    Example: forensics analyze forensics-bundles/gpu-a/2026-11-29T20-15-03Z --format json
    """
    from forensics.judge.analysis import analyze
    from forensics.remote import bundle

    threshold = parse_fail_on(fail_on)
    manifest, captures = bundle.load(bundle_path)
    report = analyze(manifest, captures, bundle=str(bundle_path))
    _emit(report, format)
    raise typer.Exit(_exit_status(report, threshold))


app.command("report")(report_command.report_command)
app.command("watch")(memory_watch.watch_command)
app.command("wait")(memory_watch.wait_command)
app.command("lint-script")(lint_script.lint_script_command)
app.command("explain")(explain.explain_command)
app.command("arm")(arm.arm_command)
app.command("pack")(pack_command.pack_command)
app.command("verify")(verify_command.verify_command)
app.command("ticket")(ticket_command.ticket_command)


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the report that `collect --format json` prints."""
    from forensics.judge.host_report import HostReport

    sys.stdout.write(json.dumps(HostReport.model_json_schema(), indent=2) + "\n")


@app.command("version")
def version_command() -> None:
    """Print the tool's version."""
    sys.stdout.write(f"forensics {__version__}\n")


app.command("sweep")(sweep_command)
app.command("history")(history_command)
app.command("diff")(diff_command)
app.command("fleet-report")(fleet_report_command)
app.add_typer(inventory_app, name="inventory")


def main() -> None:
    """Entry point: run the app, turning every known failure into one line and a status."""
    guard.run(app)
