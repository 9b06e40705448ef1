"""How any typer app of ``forensics`` runs: every failure the operator can act on ends in
one line on stderr and a documented exit status; no traceback and no usage block reaches
the terminal."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any, NoReturn

import typer

from forensics.cli.messages import say
from forensics.core.exit_status import ExitStatus


def _click_base(name: str) -> Any:
    """A base class of typer's public BadParameter: the errors of the click underneath
    typer (its own copy in recent typer), whichever click that is."""
    return next(kind for kind in typer.BadParameter.__mro__ if kind.__name__ == name)


ClickUsageError = _click_base("UsageError")
ClickError = _click_base("ClickException")


def run_app(
    app: typer.Typer, args: Sequence[str] | None = None, prog_name: str | None = None
) -> NoReturn:
    """Run ``app`` on ``args`` (default: the command line) and exit with its status."""
    # typer turns KeyboardInterrupt into a silent exit 130; ours says what was kept.
    signal.signal(signal.SIGINT, _interrupt)
    try:
        status = app(args=args, prog_name=prog_name, standalone_mode=False)
    except ClickUsageError as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare command group: its help
            sys.stderr.write(error.ctx.get_help() + "\n")
            sys.exit(ExitStatus.usage)
        _fail(usage_line(error), ExitStatus.usage)
    except ClickError as error:
        _fail(str(error.format_message()), int(error.exit_code))
    except typer.Abort:
        _fail("aborted", ExitStatus.usage)
    except KeyboardInterrupt:
        _fail("interrupted (SIGINT)", ExitStatus.interrupted)
    except Exception as error:
        _fail_with(error)
    sys.exit(status if isinstance(status, int) else ExitStatus.ok)


def _fail_with(error: Exception) -> NoReturn:
    # Imported only once something failed: the errors bring the models, which a
    # successful lint-script never needs.
    from forensics.core.errors import ForensicsError

    if isinstance(error, ForensicsError):
        _fail(error.message, error.exit_code)
    if os.environ.get("FORENSICS_DEBUG"):
        raise error
    _fail(
        f"internal error: {type(error).__name__}: {error} (set FORENSICS_DEBUG=1 for a "
        "traceback, and report it)",
        ExitStatus.internal_error,
    )


def usage_line(error: Exception) -> str:
    """A usage error of the command line as one line: what is wrong, and where the help is.

    >>> usage_line(typer.BadParameter("'x' is not a number."))
    "invalid value: 'x' is not a number (see 'forensics --help')"
    """
    said: Any = error
    lines = [line.strip() for line in str(said.format_message()).splitlines() if line.strip()]
    message = "; ".join(lines).rstrip(".")
    context = getattr(error, "ctx", None)
    where = context.command_path if context is not None else "forensics"
    return f"{message[:1].lower()}{message[1:]} (see '{where} --help')"


def _interrupt(number: int, frame: FrameType | None) -> None:
    from forensics.core.errors import Interrupted

    raise Interrupted("interrupted (SIGINT) before anything was kept")


def _fail(message: str, status: int) -> NoReturn:
    say(message)
    sys.exit(status)
