"""The one way a line reaches the operator's stderr: prefixed, on one line, and inert
(whatever a host, a file or an inventory put into the message cannot act on the terminal)."""

from __future__ import annotations

import sys

from forensics.core.escaping import one_line


def say(message: str) -> None:
    """``forensics: message`` on stderr.

    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as seen:
    ...     say("host said \\x1b]52;c;aGk=\\x07\\nbye")
    >>> seen.getvalue()
    'forensics: host said \\\\x1b]52;c;aGk=\\\\x07\\\\nbye\\n'
    """
    sys.stderr.write(f"forensics: {one_line(message)}\n")
    sys.stderr.flush()


def warn(message: str) -> None:
    say(f"warning: {message}")
