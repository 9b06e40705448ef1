"""Scrub secrets from any text that came from a host, before it leaves the parser.

The raw bundle keeps the exact bytes (it is evidence); every fact, finding, report, history
row and pack built from it goes through this one module: ``redact`` for text,
``redact_argv`` for a command line, ``redact_model`` for a whole model (``HostReport``
runs it on itself), and ``redact_counted`` where the caller must say what was removed.

Every rule replaces only the secret value with ``[REDACTED]`` and keeps the name that says
what it was. Redaction is deterministic and idempotent (redacting redacted text changes
nothing), and linear in the text: a match may start only where a key can begin, and every
repetition is bounded or cannot backtrack.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel

REDACTED = "[REDACTED]"

_KEY_CHAR = r"[A-Za-z0-9_.-]"
_SECRET_NAME = (
    r"(?:pass(?:word|wd|phrase)?|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|credential|auth)"
)
_SECRET_WORD = rf"(?:{_KEY_CHAR}*{_SECRET_NAME}{_KEY_CHAR}*)"
# Bounded, for a pattern that may start at every dash: keeps a long token linear.
_SHORT_SECRET_WORD = rf"(?:{_KEY_CHAR}{{0,64}}{_SECRET_NAME}{_KEY_CHAR}{{0,64}})"

# -----BEGIN RSA PRIVATE KEY----- ... -----END RSA PRIVATE KEY-----, the body over many
# lines; a block cut before its END line is redacted to the end of its base64.
_PEM_BLOCK = re.compile(
    r"(?P<begin>-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)"
    r"(?P<value>(?:[^-]|-(?!----END ))*)"
    r"(?P<end>-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
)
# scheme://user:password@host and scheme://:password@host (redis)
_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<key>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<value>[^/\s@]+)(?=@)"
)
# Authorization: Basic dXNlcjpwYXNz / Bearer ... / any scheme: the whole header value.
_AUTHORIZATION = re.compile(
    r"(?i)(?P<key>\b(?:proxy-)?authorization\s*[:=]\s*)"
    r"(?P<value>(?:(?:basic|bearer|digest|token|negotiate|ntlm)\s+)?[^\s'\"]+)"
)
# {"api_key": "two words"}, {'password': 'x'}, "token": 12345, and the same quoted once
# more inside YAML ('{''password'': ''x''}') or JSON (\"password\": \"x\"): a quoted key,
# its value quoted (spaces allowed) or bare.
_QUOTED_KEY_VALUE = re.compile(
    rf"(?i)(?P<key>[\"'\\]{{1,3}}{_SECRET_WORD}[\"'\\]{{1,3}}\s*[:=]\s*)"
    r"(?P<value>[\"'\\]{2,3}[^\s\"'\\,;}\]]+|\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
    r"|[^\s,;}\]\"'\\]+)"
)
# --api-key=VALUE, PASSWORD=VALUE, api_key: VALUE, password: "two words". A match may
# start only where a key can begin: trying every position of a long token and scanning it
# to its end made a 3 KB argument take a second.
_ASSIGNMENT = re.compile(
    rf"(?i)(?<!{_KEY_CHAR})(?P<key>-{{0,2}}{_SECRET_WORD}(?:=|:\s*))"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s&\"']+)"
)
# --token VALUE, -password VALUE
_FLAG_THEN_VALUE = re.compile(
    rf"(?i)(?<!-)(?P<key>--?{_SHORT_SECRET_WORD}\s+)(?P<value>[^\s-][^\s]*)"
)
# token VALUE, password VALUE: a bare keyword, then a value shaped like a secret (a digit,
# a capital or a symbol in it), so prose ("password authentication failed") stays.
_KEYWORD_THEN_VALUE = re.compile(
    r"(?<![\w-])(?P<key>(?i:token|password|passwd|passphrase|secret|api[_-]?key)\s+)"
    r"(?P<value>(?=[^\s,;]*[0-9A-Z_+/=])[^\s\[\-'\"][^\s'\",;]*)"
)
# Well-known key shapes that carry no key name beside them.
_BARE_TOKENS = re.compile(
    r"\b(?P<value>(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|"
    r"github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{20,}|"
    r"sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|xox[a-z]-[A-Za-z0-9-]{10,}|"
    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,})"
)
# mysql -pSECRET: only after a MySQL/MariaDB client on the same line (`-p` is a port to
# ssh, a flag to mkdir).
_MYSQL_CLIENT = re.compile(r"(?i)\b(?:mysql|mariadb)[a-z_-]{0,12}\b")
_COMMAND_END = re.compile(r"([;|&\n].*)", re.DOTALL)
_MYSQL_PASSWORD = re.compile(r"(?<!\S)(?P<key>-p)(?P<value>[^\s'\"]+)")


def _pem_body(match: re.Match[str]) -> str:
    # One [REDACTED] per line of the key's body: the lines after it keep their numbers,
    # so evidence that cites them still points at the right line.
    value = match["value"]
    if "\n" not in value:
        return f"{match['begin']}{REDACTED}{match['end'] or ''}"
    body = "\n".join(REDACTED if line.strip() else line for line in value.split("\n"))
    return f"{match['begin']}{body}{match['end'] or ''}"


# Every rule needs one of these in the text; one pass over it spares most strings the rules.
# It runs on every string of every report (thousands per host), so ASCII text, nearly all
# of it, is lowercased and searched case-sensitively: the same matches, ~9x faster than
# (?i) (issue 15's profile: this search was most of a collection's client CPU). Other text
# keeps (?i), which also matches non-ASCII case variants (U+017F, the long s, is an s to it).
_TRIGGERS = (
    r"pass|secret|token|key|auth|cred|://|bearer|eyj|gh[pousr]_|github_pat|glpat|hf_|"
    r"sk-|akia|asia|xox|mysql|mariadb"
)
_ANY_TRIGGER = re.compile("(?i)" + _TRIGGERS)
_ASCII_TRIGGER = re.compile(_TRIGGERS)


def _may_hold_secret(text: str) -> bool:
    """Whether any rule could match ``text``.

    >>> _may_hold_secret("/usr/bin/python3 train.py"), _may_hold_secret("X-Api-KEY: 1")
    (False, True)
    >>> _may_hold_secret("PA\\u017fSWORD=x")
    True
    """
    if text.isascii():
        return _ASCII_TRIGGER.search(text.lower()) is not None
    return _ANY_TRIGGER.search(text) is not None


_Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str]], str] | None, re.Pattern[str]]

# What each rule needs in the lowercased text before it can match (a necessary condition,
# searched case-sensitively on ASCII text). A string the pre-filter lets through, such as
# the collector's own base64 command line (4 KB, "key" in it by chance, on every host),
# then meets only the rules that can match it: each full rule costs ~0.5 ms on 4 KB.
_NAMES_A_SECRET = re.compile(
    r"pass|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth"
)
_RULES: tuple[_Rule, ...] = (
    ("private_key", _PEM_BLOCK, _pem_body, re.compile("private key")),
    ("url_password", _URL_CREDENTIALS, None, re.compile("://")),
    ("authorization", _AUTHORIZATION, None, re.compile("authorization")),
    (
        "known_token",
        _BARE_TOKENS,
        None,
        re.compile(r"bearer|gh[pousr]_|github_pat_|glpat-|hf_|sk-|akia|asia|xox|eyj"),
    ),
    ("quoted_key", _QUOTED_KEY_VALUE, None, _NAMES_A_SECRET),
    ("assignment", _ASSIGNMENT, None, _NAMES_A_SECRET),
    ("flag_value", _FLAG_THEN_VALUE, None, _NAMES_A_SECRET),
    ("keyword_value", _KEYWORD_THEN_VALUE, None, _NAMES_A_SECRET),
)


def redact_counted(text: str) -> tuple[str, Counter[str]]:
    """``redact(text)`` and how many secrets of each kind it replaced.

    >>> redact_counted('db={"password": "two words"} url=redis://:pw1@cache:6379')
    ('db={"password": "[REDACTED]"} url=redis://:[REDACTED]@cache:6379', \
Counter({'url_password': 1, 'quoted_key': 1}))
    >>> redact_counted("nothing to see")
    ('nothing to see', Counter())
    """
    counts: Counter[str] = Counter()
    if not _may_hold_secret(text):
        return text, counts
    # A rule's replacement brings none of the words a gate looks for ("[REDACTED]" and
    # what was there already), so the gates are read once, on the text as it came.
    lowered = text.lower() if text.isascii() else None
    for kind, pattern, replace, gate in _RULES:
        if lowered is None or gate.search(lowered) is not None:
            text = pattern.sub(_replacer(kind, counts, replace), text)
    may_be_mysql = lowered is None or "mysql" in lowered or "mariadb" in lowered
    if may_be_mysql and _MYSQL_CLIENT.search(text):
        text = "\n".join(_mysql_line(line, counts) for line in text.split("\n"))
    return text, counts


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
    >>> redact("mysql -uroot -pS3cret db; ssh -p22 host")
    'mysql -uroot -p[REDACTED] db; ssh -p22 host'
    >>> redact("auth with token Tk9Lmn0p, password authentication failed")
    'auth with token [REDACTED], password authentication failed'
    >>> redact(redact("PASSWORD=x {'secret': 'y z'}")) == redact("PASSWORD=x {'secret': 'y z'}")
    True
    """
    return redact_counted(text)[0] if _may_hold_secret(text) else text


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Redact a command line argument by argument, including a secret that is the argument
    after its flag (``--token VALUE``), after a bare keyword (``token VALUE``), after
    ``Bearer``, or a MySQL client's ``-pSECRET``.

    >>> redact_argv(["worker", "--token", "abc", "--api-key=x", "-H", "Bearer", "eyJhbGciOi"])
    ['worker', '--token', '[REDACTED]', '--api-key=[REDACTED]', '-H', 'Bearer', '[REDACTED]']
    >>> redact_argv(["/usr/bin/mysqldump", "-pS3cret", "db"]), redact_argv(["gh", "token", "x"])
    (['/usr/bin/mysqldump', '-p[REDACTED]', 'db'], ['gh', 'token', '[REDACTED]'])
    """
    redacted = [redact(arg) for arg in argv]
    mysql = bool(argv) and _MYSQL_CLIENT.fullmatch(argv[0].rsplit("/", 1)[-1]) is not None
    for index in range(1, len(argv)):
        if mysql and argv[index].startswith("-p") and len(argv[index]) > 2:
            redacted[index] = f"-p{REDACTED}"
            continue
        previous = argv[index - 1]
        after_header = index >= 2 and argv[index - 2].lower().endswith("authorization:")
        if (
            previous.lower() in _KEYWORDS or (after_header and previous.lower() in _SCHEMES)
        ) and redacted[index] != REDACTED:
            redacted[index] = REDACTED
            continue
        if not _may_name_next(previous):
            continue
        pair = redact(f"{previous} {argv[index]}")
        if not pair.endswith(f" {redacted[index]}"):
            redacted[index] = REDACTED
    return redacted


_SCHEMES = frozenset({"basic", "bearer", "digest", "negotiate", "ntlm", "token"})
_KEYWORDS = frozenset({"token", "password", "passwd", "passphrase", "secret", "api_key", "apikey"})

Model = TypeVar("Model", bound=BaseModel)


def redact_model(model: Model) -> Model:
    """A copy of ``model`` with every string value in it redacted, at any depth (keys of
    mappings are names the tool chose and are kept). The same object when nothing changed.

    >>> from forensics.core.models import Finding, Severity
    >>> found = Finding(id="log.errors", severity=Severity.warning, explanation="",
    ...                 title="api_key=abc123 rejected", subject={"line": "password=hunter2"})
    >>> cleaned = redact_model(found)
    >>> cleaned.title, cleaned.subject, redact_model(cleaned) is cleaned
    ('api_key=[REDACTED] rejected', {'line': 'password=[REDACTED]'}, True)
    """
    return redact_value(model)


def redact_fields(model: BaseModel, names: Iterable[str]) -> None:
    """Redact the fields ``names`` of ``model`` in place, each only where it changes: for
    a model's ``after`` validator, so that host text in it is redacted however the model
    was made (judged, read back from JSON, copied into a fleet report)."""
    for name in names:
        current = getattr(model, name)
        cleaned = redact_value(current)
        if cleaned is not current:
            setattr(model, name, cleaned)


Value = TypeVar("Value")


def redact_value(value: Value) -> Value:
    """``value`` with every string in it redacted: a string, a model, or lists, tuples and
    dicts of them at any depth; the same object when nothing changed."""
    return _redacted(value)  # type: ignore[no-any-return]


def _redacted(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, Enum):
        cleaned = redact(value)
        return value if cleaned == value else cleaned
    if isinstance(value, BaseModel):
        changed = {}
        for name in type(value).model_fields:
            current = getattr(value, name)
            cleaned = _redacted(current)
            if cleaned is not current:
                changed[name] = cleaned
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, list | tuple):
        items = [_redacted(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        entries = {key: _redacted(item) for key, item in value.items()}
        if all(entries[key] is item for key, item in value.items()):
            return value
        return entries
    return value


def _replacer(
    kind: str, counts: Counter[str], replace: Callable[[re.Match[str]], str] | None
) -> Callable[[re.Match[str]], str]:
    def substitute(match: re.Match[str]) -> str:
        raw = match["value"]
        opening = raw[: len(raw) - len(raw.lstrip("\"'\\"))]
        value, closing = raw[len(opening) :], ""
        if opening in ('"', "'") and len(raw) > 1 and raw.endswith(opening):
            value, closing = raw[1:-1], opening
        if value.strip().startswith(REDACTED[:-1]):
            return match.group(0)
        counts[kind] += 1
        if replace is not None:
            return replace(match)
        return f"{match.groupdict().get('key') or ''}{opening}{REDACTED}{closing}"

    return substitute


def _mysql_line(line: str, counts: Counter[str]) -> str:
    client = _MYSQL_CLIENT.search(line)
    if client is None:
        return line
    head, tail = line[: client.end()], line[client.end() :]
    command = _COMMAND_END.split(tail, maxsplit=1)
    command[0] = _MYSQL_PASSWORD.sub(_replacer("mysql_password", counts, None), command[0])
    return head + "".join(command)


def _may_name_next(argument: str) -> bool:
    """Only a flag, a ``key:`` or ``Bearer`` can make the next argument a secret."""
    return argument.startswith("-") or argument.endswith(":") or argument.lower().endswith("bearer")
