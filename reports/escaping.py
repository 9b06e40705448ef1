"""Make host-supplied text inert wherever a report shows it.

Host data is hostile by default: process names, log lines and file contents can hold
terminal escape sequences, Markdown or HTML. Nothing the host wrote may act on the reader:
no colour change in a terminal, no table cell split, no image fetched, no tag obeyed.
HTML escaping is Jinja's autoescape; this module does the rest.
"""

from __future__ import annotations

import re

# C0 and C1 controls but newline and tab; bidi overrides ("Trojan Source") reorder what is read.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~&])")
# Text that starts like a list item or is a setext underline / thematic break on its own.
_MD_LINE_START = re.compile(r"^(\s*)([-+=]|\d{1,9}[.)])(?=\s|$|[-=\s]*$)")


def inert(text: str) -> str:
    """Show control characters as ``\\xNN`` or ``\\uNNNN`` instead of letting a terminal
    or a renderer obey them; lone surrogates (undecodable bytes) become U+FFFD.

    >>> inert("ok\\x1b[31mred\\x07 \\u202eevil")
    'ok\\\\x1b[31mred\\\\x07 \\\\u202eevil'
    >>> inert("bad\\udcff")
    'bad\\ufffd'
    """
    shown = _CONTROL.sub(_escape_control, text)
    return _SURROGATE.sub("\ufffd", shown)


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
