"""Make host-supplied text inert wherever a report shows it.

Host data is hostile by default: process names, log lines and file contents can hold
terminal escape sequences, Markdown or HTML. Nothing the host wrote may act on the reader.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~])")


def inert(text: str) -> str:
    """Show control characters as ``\\xNN`` instead of letting a terminal obey them.

    >>> inert("ok\\x1b[31mred\\x07")
    'ok\\\\x1b[31mred\\\\x07'
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def markdown_inline(text: str) -> str:
    """Escape text for a Markdown paragraph or table cell (one line, pipes escaped).

    >>> markdown_inline("a|b `c` <script>")
    'a\\\\|b \\\\`c\\\\` \\\\<script\\\\>'
    """
    return _MD_SPECIAL.sub(r"\\\1", inert(text).replace("\n", " "))


def markdown_fence(text: str) -> str:
    """A fenced block that the text cannot close early, whatever backticks it holds.

    >>> print(markdown_fence("x ``` y"))
    ````text
    x ``` y
    ````
    """
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{inert(text)}\n{fence}"
