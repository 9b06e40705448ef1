"""The ``forensics`` command line: the typer app, its commands, and ``main``. Every failure
the operator can act on ends in one line on stderr and a documented exit status; no
traceback and no usage block reaches the terminal."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Annotated, Any

import typer

from forensics.cli import explain, lint_script
from forensics.cli import report as report_command
from forensics.cli import watch as memory_watch
from forensics.cli.analyze import analyze_command
from forensics.cli.collect import collect_command
from forensics.cli.history import diff_command, history_command
from forensics.cli.inventory import app as inventory_app
from forensics.cli.messages import say
from forensics.cli.schema import schema_command
from forensics.cli.sweep import sweep_command
from forensics.cli.version import version_command
from forensics.core.errors import ForensicsError, Interrupted
from forensics.core.exit_status import ExitStatus

EXIT_CODES_HELP = """
Exit status: 0 collected, no finding at or above --fail-on; 1 collected with such a finding;
2 usage or configuration error; 3 could not collect (unreachable, auth refused, host key
unknown or changed, deadline hit before anything came back); 130 interrupted (SIGINT).
"""


def _click_base(name: str) -> type[Exception]:
    """A base class of typer's public BadParameter: the errors of the click underneath
    typer (its own copy in recent typer), whichever click that is."""
    return next(kind for kind in typer.BadParameter.__mro__ if kind.__name__ == name)


ClickUsageError = _click_base("UsageError")
ClickError = _click_base("ClickException")

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
app.command("schema")(schema_command)
app.command("version")(version_command)
app.command("sweep")(sweep_command)
app.command("history")(history_command)
app.command("diff")(diff_command)
app.add_typer(inventory_app, name="inventory")


def main() -> None:
    """Entry point: run the app, turning every known failure into one line and a status."""
    # typer turns KeyboardInterrupt into a silent exit 130; ours says what was kept.
    signal.signal(signal.SIGINT, _interrupt)
    try:
        status = app(standalone_mode=False)
    except ClickUsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare command group: its help
            sys.stderr.write(_context(error).get_help() + "\n")
            sys.exit(ExitStatus.usage)
        _fail(usage_line(error), ExitStatus.usage)
    except ClickError as error:
        said: Any = error
        _fail(str(said.format_message()), int(said.exit_code))
    except ForensicsError as error:
        _fail(error.message, error.exit_code)
    except typer.Abort:
        _fail("aborted", ExitStatus.usage)
    except KeyboardInterrupt:
        _fail("interrupted (SIGINT)", ExitStatus.interrupted)
    except Exception as error:
        if os.environ.get("FORENSICS_DEBUG"):
            raise
        _fail(
            f"internal error: {type(error).__name__}: {error} (set FORENSICS_DEBUG=1 for a "
            "traceback, and report it)",
            ExitStatus.internal_error,
        )
    sys.exit(status if isinstance(status, int) else 0)


def usage_line(error: Exception) -> str:
    """A usage error of the command line as one line: what is wrong, and where the help is.

    >>> usage_line(typer.BadParameter("'x' is not a number."))
    "invalid value: 'x' is not a number (see 'forensics --help')"
    """
    said: Any = error
    lines = [line.strip() for line in str(said.format_message()).splitlines() if line.strip()]
    message = "; ".join(lines).rstrip(".")
    context = _context(error)
    where = context.command_path if context is not None else "forensics"
    return f"{message[:1].lower()}{message[1:]} (see '{where} --help')"


def _context(error: Exception) -> Any:
    return getattr(error, "ctx", None)


def _interrupt(number: int, frame: FrameType | None) -> None:
    raise Interrupted("interrupted (SIGINT) before anything was kept")


def _fail(message: str, status: int) -> None:
    say(message)
    sys.exit(status)
