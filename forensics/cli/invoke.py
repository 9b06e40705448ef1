"""Run a typer application so that click's own errors end like ours: one inert line on
stderr and a documented exit status (click would print a usage block and echo the bad
value as it came, bidi controls included)."""

from __future__ import annotations

from typing import Any

import typer

from forensics.cli.messages import say
from forensics.core.exit_status import ExitStatus


def _click_class(name: str) -> Any:
    """click's exception classes, from typer's own click or the click package alike."""
    return next(kind for kind in typer.BadParameter.__mro__ if kind.__name__ == name)


_CLICK_USAGE_ERROR = _click_class("UsageError")
_CLICK_EXCEPTION = _click_class("ClickException")


def invoke(app: typer.Typer, args: list[str] | None = None, prog_name: str | None = None) -> int:
    """Run ``app``; return its exit status, having said click's errors in one line."""
    try:
        status = app(args=args, prog_name=prog_name, standalone_mode=False)
    except _CLICK_USAGE_ERROR as error:
        context = getattr(error, "ctx", None)
        command = context.command_path if context is not None else "forensics"
        say(f"{error.format_message()} (see {command} --help)")
        return ExitStatus.usage
    except _CLICK_EXCEPTION as error:
        say(error.format_message())
        return int(error.exit_code)
    except typer.Abort:
        say("aborted")
        return ExitStatus.usage
    return status if isinstance(status, int) else ExitStatus.ok
