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
    command = typer.main.get_command(app)
    invoke = command.invoke

    def invoke_keeping_eof(context: Any) -> Any:
        # click would print a blank line and call a library's EOFError an "Abort".
        try:
            return invoke(context)
        except EOFError as error:
            raise _EndOfInput(error) from error

    command.invoke = invoke_keeping_eof  # type: ignore[method-assign,assignment]
    try:
        status = command.main(args=args, prog_name=prog_name, standalone_mode=False)
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
    except _EndOfInput as error:
        _unexpected(error.eof)
    except Exception as error:
        # Imported on failure only: the error types bring the models, slow to import.
        from forensics.core.errors import ForensicsError

        if isinstance(error, ForensicsError):
            _fail(error.message, error.exit_code)
        _unexpected(error)
    sys.exit(status if isinstance(status, int) else ExitStatus.ok)


class _EndOfInput(Exception):
    """An EOFError raised inside a command (the tool never prompts: a library's, such as
    paramiko's when a server hangs up), carried past click as an internal error."""

    def __init__(self, eof: EOFError) -> None:
        super().__init__(str(eof))
        self.eof = eof


def _unexpected(error: BaseException) -> NoReturn:
    """A failure the tool has no words for: one line asking for a report (the traceback
    with FORENSICS_DEBUG=1)."""
    if os.environ.get("FORENSICS_DEBUG"):
        raise error
    what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    _fail(
        f"internal error: {what} (set FORENSICS_DEBUG=1 for a traceback, and report it)",
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
