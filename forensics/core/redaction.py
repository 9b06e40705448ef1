"""Scrub secrets from command lines and environment-style text before they leave the parser.

The raw bundle keeps the exact bytes (it is evidence); every model, report and log line
built from it goes through ``redact`` first.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence

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
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)"
    r"(?P<user>[^/\s:@]+):(?P<password>[^/\s@]+)@"
)
# Well-known key shapes that carry no key name beside them, by kind.
_BARE_TOKENS = (
    ("bearer_token", re.compile(r"(?i)\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack_token", re.compile(r"\bxox[a-z]-[A-Za-z0-9-]{10,}")),
    ("aws_access_key_id", re.compile(r"\bAKIA[0-9A-Z]{16}")),
    ("api_key", re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,})")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}")),
)
_PRIVATE_KEY = re.compile(
    r"(?P<begin>-----BEGIN\s(?:[A-Z0-9]+\s)*PRIVATE\sKEY-----)(?P<body>.*?)"
    r"(?P<end>-----END\s(?:[A-Z0-9]+\s)*PRIVATE\sKEY-----|\Z)",
    re.DOTALL,
)
_LINE_PREFIX = re.compile(r"[^A-Za-z0-9+/=\[]*")
# "api_key": "VALUE" (JSON) and 'password': 'VALUE' (Python, YAML flow)
_QUOTED_SECRETS = (
    *(
        re.compile(
            rf"(?i)(?P<key>{quote}{_SHORT_SECRET_WORD}{quote}\s*:\s*{quote})"
            rf"(?P<value>(?:[^{quote}\\\n]|\\.)*)(?P<close>{quote})"
        )
        for quote in ('"', "'")
    ),
    # JSON inside a JSON string: {"msg": "{\"api_key\": \"VALUE\"}"}
    re.compile(
        rf'(?i)(?P<key>\\"{_SHORT_SECRET_WORD}\\"\s*:\s*\\")(?P<value>[^"\\\n]*)(?P<close>\\")'
    ),
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
    return redact_counted(text)[0]


def redact_counted(text: str) -> tuple[str, Counter[str]]:
    """``redact``, also counting what was replaced by kind (never the values). Idempotent:
    a second pass replaces nothing and counts nothing.

    >>> redacted, counts = redact_counted('{"api_key": "abc"} key=AKIAABCDEFGHIJKLMNOP')
    >>> redacted, sorted(counts.items())
    ('{"api_key": "[REDACTED]"} key=[REDACTED]', [('aws_access_key_id', 1), ('quoted_secret', 1)])
    >>> redact_counted(redacted)[1]
    Counter()
    """
    counts: Counter[str] = Counter()

    def replace(kind: str, match: re.Match[str], keep: str, value: str, after: str = "") -> str:
        if value == REDACTED or value.startswith(REDACTED):
            return match.group(0)
        counts[kind] += 1
        return f"{keep}{REDACTED}{after}"

    text = _PRIVATE_KEY.sub(lambda m: _private_key(m, counts), text)
    text = _URL_CREDENTIALS.sub(
        lambda m: replace("url_password", m, f"{m['scheme']}{m['user']}:", m["password"], "@"),
        text,
    )
    for pattern in _QUOTED_SECRETS:
        text = pattern.sub(
            lambda m: replace("quoted_secret", m, m["key"], m["value"], m["close"]),
            text,
        )
    for kind, pattern in _BARE_TOKENS:
        text = pattern.sub(functools.partial(_bare, replace, kind), text)
    text = _ASSIGNMENT.sub(
        lambda m: replace("secret_assignment", m, f"{m['key']}{m['sep']}", m["value"]), text
    )
    text = _FLAG_THEN_VALUE.sub(
        lambda m: replace("secret_flag", m, f"{m['key']}{m['sep']}", m["value"]), text
    )
    return text, counts


def _private_key(match: re.Match[str], counts: Counter[str]) -> str:
    """Each line of the key body becomes ``[REDACTED]`` after whatever prefix the line had
    (a log's ``|``, a quote's ``> ``): the text keeps its lines, so evidence line numbers
    and line-based formats still hold."""
    lines = match["body"].split("\n")
    kept = []
    for line in lines:
        prefix = _LINE_PREFIX.match(line)
        head = prefix.group(0) if prefix else ""
        rest = line[len(head) :]
        kept.append(head + (REDACTED if rest.strip() else rest))
    body = "\n".join(kept)
    if body != match["body"]:
        counts["private_key"] += 1
    return f"{match['begin']}{body}{match['end']}"


def _bare(replace: Callable[..., str], kind: str, match: re.Match[str]) -> str:
    return replace(kind, match, "", match.group(0))


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
