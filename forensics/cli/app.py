"""The ``forensics`` command line: the typer app, its commands, and ``main``. Every failure
the operator can act on ends in one line on stderr and a documented exit status; no
traceback and no usage block reaches the terminal."""

from __future__ import annotations

from typing import Annotated

import typer

from forensics.cli import arm, explain, guard, lint_script
from forensics.cli import pack as pack_command
from forensics.cli import report as report_command
from forensics.cli import ticket as ticket_command
from forensics.cli import verify as verify_command
from forensics.cli import watch as memory_watch
from forensics.cli.analyze import analyze_command
from forensics.cli.collect import collect_command
from forensics.cli.fleet_report import fleet_report_command
from forensics.cli.history import diff_command, history_command
from forensics.cli.inventory import app as inventory_app
from forensics.cli.schema import schema_command
from forensics.cli.sweep import sweep_command
from forensics.cli.version import version_command

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
        version_command()
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


app.command("collect")(collect_command)
app.command("analyze")(analyze_command)
app.command("report")(report_command.report_command)
app.command("watch")(memory_watch.watch_command)
app.command("wait")(memory_watch.wait_command)
app.command("lint-script")(lint_script.lint_script_command)
app.command("explain")(explain.explain_command)
app.command("arm")(arm.arm_command)
app.command("pack")(pack_command.pack_command)
app.command("verify")(verify_command.verify_command)
app.command("ticket")(ticket_command.ticket_command)
app.command("schema")(schema_command)
app.command("version")(version_command)
app.command("sweep")(sweep_command)
app.command("history")(history_command)
app.command("diff")(diff_command)
app.command("fleet-report")(fleet_report_command)
app.add_typer(inventory_app, name="inventory")


def main() -> None:
    """Run the whole application (``forensics.cli.entry`` is the executable)."""
    guard.run(app)
