"""Scrub secrets from command lines and environment-style text before they leave the parser.

The raw bundle keeps the exact bytes (it is evidence); every model, report and log line
built from it goes through ``redact`` first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "[REDACTED]"

_KEY_CHAR = r"[A-Za-z0-9_.-]"
_SECRET_NAME = (
    r"(?:pass(?:word|wd|phrase)?|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|credential|auth)"
)
_SECRET_WORD = rf"(?:{_KEY_CHAR}*{_SECRET_NAME}{_KEY_CHAR}*)"
# Bounded, for a pattern that may start at every dash: keeps a long token linear.
_SHORT_SECRET_WORD = rf"(?:{_KEY_CHAR}{{0,64}}{_SECRET_NAME}{_KEY_CHAR}{{0,64}})"
# --api-key=VALUE, PASSWORD=VALUE, --token VALUE, api_key: VALUE. A match may start only
# where a key can begin: trying every position of a long token and scanning it to its end
# made a 3 KB argument take a second.
_ASSIGNMENT = re.compile(
    rf"(?i)(?<!{_KEY_CHAR})(?P<key>-{{0,2}}{_SECRET_WORD})(?P<sep>=|:\s*)(?P<value>[^\s&]+)"
)
_FLAG_THEN_VALUE = re.compile(
    rf"(?i)(?<!-)(?P<key>--?{_SHORT_SECRET_WORD})(?P<sep>\s+)(?P<value>[^\s-][^\s]*)"
)
# scheme://user:password@host
_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s:@]+):[^/\s@]+@"
)
# Bearer tokens and well-known key shapes that carry no key name beside them.
_BARE_TOKENS = re.compile(
    r"(?i)\b(?:bearer\s+[A-Za-z0-9._~+/=-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|"
    r"hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,})"
)


def redact(text: str) -> str:
    """Replace secret values with ``[REDACTED]``, keeping the names that say what they were.

    >>> redact("cuzk --api-key=abc123 --port 9000")
    'cuzk --api-key=[REDACTED] --port 9000'
    >>> redact("env PASSWORD=hunter2 DB_URL=postgres://bob:s3cret@db/x")
    'env PASSWORD=[REDACTED] DB_URL=postgres://bob:[REDACTED]@db/x'
    >>> redact("worker --token abcdef --verbose")
    'worker --token [REDACTED] --verbose'
    >>> redact("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9'")
    "curl -H 'Authorization: [REDACTED]'"
    """
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{REDACTED}@", text)
    text = _BARE_TOKENS.sub(REDACTED, text)
    text = _ASSIGNMENT.sub(_keep_key, text)
    return _FLAG_THEN_VALUE.sub(_keep_key, text)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Redact a command line argument by argument, including a secret that is the argument
    after its flag (``--token VALUE``) or after ``Bearer``.

    >>> redact_argv(["worker", "--token", "abc", "--api-key=x", "-H", "Bearer", "eyJhbGciOi"])
    ['worker', '--token', '[REDACTED]', '--api-key=[REDACTED]', '-H', 'Bearer', '[REDACTED]']
    """
    redacted = [redact(arg) for arg in argv]
    for index in range(1, len(argv)):
        previous = argv[index - 1]
        if not _may_name_next(previous):
            continue
        pair = redact(f"{previous} {argv[index]}")
        if not pair.endswith(f" {redacted[index]}"):
            redacted[index] = REDACTED
    return redacted


def _may_name_next(argument: str) -> bool:
    """Only a flag, a ``key:`` or ``Bearer`` can make the next argument a secret."""
    return argument.startswith("-") or argument.endswith(":") or argument.lower().endswith("bearer")


def _keep_key(match: re.Match[str]) -> str:
    if match["value"] == REDACTED or match["value"].startswith(REDACTED):
        return match.group(0)
    return f"{match['key']}{match['sep']}{REDACTED}"
