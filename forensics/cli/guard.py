"""Run a typer app so that every failure the operator can act on ends in one inert line
on stderr and a documented exit status: no traceback, and no raw echo of a bad argument.
Shared by the whole CLI (``app.main``) and by ``lint-script``'s early start
(``forensics/cli/entry.py``)."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Any, NoReturn

import typer

from forensics.cli.messages import say
from forensics.core.exit_status import ExitStatus


def run(app: typer.Typer, args: list[str] | None = None, prog_name: str | None = None) -> NoReturn:
    """Run ``app`` on ``args`` (the command line when None) and exit with its status."""
    # typer turns KeyboardInterrupt into a silent exit 130; ours says what was kept.
    signal.signal(signal.SIGINT, _interrupt)
    try:
        status = app(args=args, prog_name=prog_name, standalone_mode=False)
    except _CLICK_USAGE_ERROR as error:  # click's own text would echo the bad value raw
        if type(error).__name__ == "NoArgsIsHelpError":  # a bare command group: its help
            sys.stderr.write(error.ctx.get_help() + "\n")
            sys.exit(ExitStatus.usage)
        _fail(usage_line(error), ExitStatus.usage)
    except _CLICK_EXCEPTION as error:
        _fail(error.format_message(), error.exit_code)
    except typer.Abort:
        _fail("aborted", ExitStatus.usage)
    except KeyboardInterrupt:
        _fail("interrupted (SIGINT)", ExitStatus.interrupted)
    except Exception as error:
        # Imported on failure only: the error types bring the models, slow to import.
        from forensics.core.errors import ForensicsError

        if isinstance(error, ForensicsError):
            _fail(error.message, error.exit_code)
        if os.environ.get("FORENSICS_DEBUG"):
            raise
        _fail(
            f"internal error: {type(error).__name__}: {error} (set FORENSICS_DEBUG=1 for a "
            "traceback, and report it)",
            ExitStatus.internal_error,
        )
    sys.exit(status if isinstance(status, int) else ExitStatus.ok)


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


def _click_class(name: str) -> Any:
    """click's exception classes, from typer's own click or the click package alike."""
    return next(kind for kind in typer.BadParameter.__mro__ if kind.__name__ == name)


_CLICK_USAGE_ERROR = _click_class("UsageError")
_CLICK_EXCEPTION = _click_class("ClickException")


def _interrupt(number: int, frame: FrameType | None) -> None:
    from forensics.core.errors import Interrupted

    raise Interrupted("interrupted (SIGINT) before anything was kept")


def _fail(message: str, status: int) -> NoReturn:
    say(message)
    sys.exit(status)
