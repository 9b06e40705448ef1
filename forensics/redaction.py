"""Scrub secrets from command lines and environment-style text before they leave the parser.

The raw bundle keeps the exact bytes (it is evidence); every model, report and log line
built from it goes through ``redact`` first.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_SECRET_WORD = (
    r"(?:[A-Za-z0-9_.-]*(?:pass(?:word|wd|phrase)?|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|credential|auth)[A-Za-z0-9_.-]*)"
)
# Matches start only where a word starts (the lookbehinds): trying every position inside a
# long word made redaction quadratic (a 100 KB script line took minutes).
_WORD_START = r"(?<![A-Za-z0-9_.-])"
# --api-key=VALUE, PASSWORD=VALUE, --token VALUE, api_key: VALUE
_ASSIGNMENT = re.compile(
    rf"(?i){_WORD_START}(?P<key>-{{0,2}}{_SECRET_WORD})(?P<sep>=|:\s*)(?P<value>[^\s&]+)"
)
_FLAG_THEN_VALUE = re.compile(
    rf"(?i){_WORD_START}(?P<key>--?{_SECRET_WORD})(?P<sep>\s+)(?P<value>[^\s-][^\s]*)"
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


def _keep_key(match: re.Match[str]) -> str:
    if match["value"] == REDACTED or match["value"].startswith(REDACTED):
        return match.group(0)
    return f"{match['key']}{match['sep']}{REDACTED}"
