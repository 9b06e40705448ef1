"""``forensics collect``: one host into an evidence bundle, and what it shows."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from forensics.cli.fail_on import parse_fail_on
from forensics.cli.options import Given, declared_options
from forensics.core.errors import UsageError
from forensics.core.exit_status import ExitStatus
from forensics.core.models import CollectOptions, SshOptions
from forensics.core.report_format import Format
from forensics.core.targets import parse_target

TargetArgument = Annotated[
    str,
    typer.Argument(
        help="'local' (this machine, no SSH), [user@]host[:port], or an SSH config alias."
    ),
]


def probe_names() -> list[str]:
    """The names of the probes that run on the host, without importing them: each one's
    host shell is ``probes/<name>.sh`` (forensics/remote/host_script.py), so ``--help``
    lists them from the directory; ``<name>.<part>.sh`` is a part of probe ``<name>``.
    (The recorder, whose sections run on the client, has none; ``arm`` is its command.)"""
    shells = (Path(__file__).parent.parent / "probes").glob("*.sh")
    return sorted(path.stem for path in shells if "." not in path.stem)


@declared_options(
    SshOptions,
    CollectOptions,
    more_help={"probes": "This build has: " + ", ".join(probe_names()) + "."},
)
def collect_command(
    target: TargetArgument = "local",
    out: Annotated[Path, typer.Option(help="Where bundles go: OUT/<target>/<UTC time>/.")] = Path(
        "forensics-bundles"
    ),
    format: Annotated[
        Format, typer.Option("--format", "-f", help="What goes to stdout.")
    ] = Format.text,
    fail_on: Annotated[
        str, typer.Option(help="Exit 1 when a finding is at least: warning, critical, never.")
    ] = "critical",
    explain_ssh: Annotated[
        bool,
        typer.Option(
            "--explain-ssh",
            help="Print the SSH settings the target resolves to (as `ssh -G` does, plus the "
            "keys, known_hosts files and jump hosts used) and exit without connecting.",
        ),
    ] = False,
    *,
    given: Given,
) -> None:
    """Collect one host into an evidence bundle and print what it shows.

    Examples:

      forensics collect                                  # this machine, no SSH

      forensics collect root@ssh6.vast.ai:17008 -i ~/.ssh/id_ed25519

      forensics collect gpu-a --focus cuzk --format json > report.json

      forensics collect gpu-a --focus cuzk --log '/work/bench*.log' --expected-log /var/log/cuzk.log

    Durations are 90, 90s, 500ms, 2m, 1h30m or 1d.

    Exit status: 0 collected, nothing at or above --fail-on; 1 collected with such a finding;
    2 usage error; 3 could not collect (unreachable, auth or sudo refused, host key unknown or
    changed, deadline before any section finished).
    """
    threshold = parse_fail_on(fail_on)
    parsed = parse_target(target, given.read(SshOptions))
    options = given.read(CollectOptions)
    if explain_ssh and parsed.is_local:
        raise UsageError("--explain-ssh: 'local' uses no SSH")
    # SSH, the probes and the reports load once the options are read, so --help and a
    # usage error need none of them (docs/ARCHITECTURE.md, "Start-up").
    from forensics.cli.host_output import exit_status, print_report
    from forensics.collect import collect
    from forensics.remote.transport import explain as explain_ssh_settings

    if explain_ssh:
        sys.stdout.write(explain_ssh_settings(parsed))
        raise typer.Exit(ExitStatus.ok)
    if parsed.is_local:  # the script runs in a temp dir: make the operator's paths absolute
        options = options.model_copy(
            update={"scripts": tuple(os.path.abspath(path) for path in options.scripts)}
        )
    report = collect(parsed, options, out)
    print_report(report, format)
    raise typer.Exit(exit_status(report, threshold))
