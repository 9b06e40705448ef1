"""The one escaping of text that came from a host, a file or an inventory.

Host data is hostile by default: process names, log lines, stderr of a login shell, labels
in an inventory can hold terminal escape sequences (OSC 52 writes the clipboard, OSC 0 the
window title), C1 controls, or bidi overrides that reorder what the reader sees ("Trojan
Source"). Nothing the host wrote may act on the reader. Every output path goes through
this module: ``inert`` for text (tables, reports, progress lines), ``one_line`` for the
one-line messages on stderr, ``inert_json`` for JSON documents on stdout.
"""

from __future__ import annotations

import re

# C0 and C1 controls but newline and tab; DEL; bidi embeddings, overrides, isolates and
# marks; line and paragraph separators (a terminal or an editor breaks lines at them).
_C0 = "\x00-\x08\x0b-\x1f"
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_C0}{_OTHERS}]")
# Inside a JSON document C0 controls are escaped by every serialiser; the others are not.
_JSON_RAW = re.compile(f"[{_OTHERS}]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
MESSAGE_LIMIT = 2000


def inert(text: str) -> str:
    """Show control characters as ``\\xNN`` or ``\\uNNNN`` instead of letting a terminal
    or a renderer obey them; lone surrogates (undecodable bytes) become U+FFFD.

    >>> inert("ok\\x1b[31mred\\x07 \\u202eevil")
    'ok\\\\x1b[31mred\\\\x07 \\\\u202eevil'
    >>> inert("\\x1b]52;c;aGk=\\x07 \\x9b31m \\u2066x")
    '\\\\x1b]52;c;aGk=\\\\x07 \\\\x9b31m \\\\u2066x'
    >>> inert("bad\\udcff")
    'bad\\ufffd'
    """
    shown = _CONTROL.sub(_escape_control, text)
    return _SURROGATE.sub("\ufffd", shown)


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``inert`` text on one line, at most ``limit`` characters: for messages on stderr.

    >>> one_line("first\\nsecond\\x1b]0;owned\\x07")
    'first\\\\nsecond\\\\x1b]0;owned\\\\x07'
    >>> one_line("x" * 50, limit=10)
    'xxxxxxxxx…'
    """
    flat = inert(text).replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def inert_json(document: str) -> str:
    """A serialised JSON document with the controls no serialiser escapes (DEL, C1, bidi,
    line separators) written as ``\\uNNNN``: the same data, nothing for a terminal to obey.

    >>> import json
    >>> shown = inert_json(json.dumps({"name": "a\\u202eb\\x9b"}, ensure_ascii=False))
    >>> shown, json.loads(shown)["name"] == "a\\u202eb\\x9b"
    ('{"name": "a\\\\u202eb\\\\u009b"}', True)
    """
    return _JSON_RAW.sub(lambda match: f"\\u{ord(match.group(0)):04x}", document)


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
