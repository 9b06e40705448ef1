"""Make host-supplied text inert in Markdown: no table cell split, no image fetched, no
tag obeyed. Control characters are made visible by ``forensics.core.escaping.inert``, the
one escaping of host text; HTML escaping is Jinja's autoescape.
"""

from __future__ import annotations

import re

# Re-exported: templates and older callers import ``inert`` from here.
from forensics.core.escaping import inert as inert

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~&])")
# Text that starts like a list item or is a setext underline / thematic break on its own.
_MD_LINE_START = re.compile(r"^(\s*)([-+=]|\d{1,9}[.)])(?=\s|$|[-=\s]*$)")


def markdown_inline(text: str) -> str:
    """Escape text for a Markdown paragraph, heading or table cell: one line, pipes escaped,
    no tag, link, image or emphasis can start.

    >>> markdown_inline("a|b `c` <script> ![x](http://e/i.png)")
    'a\\\\|b \\\\`c\\\\` \\\\<script\\\\> \\\\!\\\\[x\\\\](http://e/i.png)'
    >>> markdown_inline("- 1. not a list\\nsecond line"), markdown_inline("6.1-rc2")
    ('\\\\- 1. not a list second line', '6.1-rc2')
    """
    flat = inert(text.replace("\r\n", " ").replace("\n", " "))
    escaped = _MD_SPECIAL.sub(r"\\\1", flat)
    return _MD_LINE_START.sub(_escape_line_start, escaped, count=1)


def _escape_line_start(match: re.Match[str]) -> str:
    marker = match.group(2)
    return match.group(1) + (f"\\{marker}" if len(marker) == 1 else f"{marker[:-1]}\\{marker[-1]}")


def markdown_code(text: str) -> str:
    """An inline code span the text cannot close early (not for table cells: pipes stay).

    >>> print(markdown_code("ls `pwd`"))
    `` ls `pwd` ``
    """
    flat = inert(text.replace("\n", " "))
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    if longest == 0:
        return f"`{flat}`"
    ticks = "`" * (longest + 1)
    return f"{ticks} {flat} {ticks}"


def markdown_fence(text: str) -> str:
    """A fenced block that the text cannot close early, whatever backticks it holds.

    >>> print(markdown_fence("x ``` y"))
    ````text
    x ``` y
    ````
    """
    shown = inert(text)
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{shown}\n{fence}"


_WIKI_SPECIAL = re.compile(r"[\\{}\[\]|!#]|(?<!\w)[-+^~_*?]|[-+^~_*?](?!\w)")


def jira_wiki_inline(text: str) -> str:
    """Escape text for Jira wiki markup (a paragraph or a table cell): one line, no
    emphasis, link, macro or cell boundary can start. Emphasis marks inside a word
    (``prover-1``) cannot start any and stay as they are.

    >>> print(jira_wiki_inline("a|b *bold* {code} [x|http://e] -x- prover-1 2+2"))
    a\\|b \\*bold\\* \\{code\\} \\[x\\|http://e\\] \\-x\\- prover-1 2+2
    """
    flat = inert(text.replace("\r\n", " ").replace("\n", " "))
    return _WIKI_SPECIAL.sub(lambda match: "\\" + match.group(0), flat)


def jira_wiki_block(text: str) -> str:
    """A ``{noformat}`` block the text cannot close early.

    >>> print(jira_wiki_block("x {noformat} y"))
    {noformat}
    x {noformat\\} y
    {noformat}
    """
    shown = inert(text).replace("{noformat}", "{noformat\\}")
    return f"{{noformat}}\n{shown}\n{{noformat}}"
