"""``--focus`` (or an inventory's ``focus:``): the process in question, named by a regex.

One dialect, read the same everywhere: POSIX extended regular expressions as ``grep -E``
reads them in the C locale, byte by byte. The host matches with ``grep -E`` (the shell
function ``_fx_focus`` in ``forensics/remote/focus.sh``); this side matches the parsed
facts and the OOM verdict with RE2, whose time is linear in the text whatever the pattern
(``(a+)+$`` cannot hang a collection or an analysis). ``focus_problem`` accepts only what
both read alike, so the CLI and the inventory refuse, with one line saying why, what
``grep -E`` would read differently: Perl escapes (``\\d``, ``\\w``, ``\\b``),
backreferences, ``(?i)`` and other ``(?`` groups, lazy quantifiers.

What is matched, on both sides: a process's name (``/proc/PID/comm``) and its command line
(the first 4096 bytes of ``/proc/PID/cmdline``, NULs and newlines read as spaces, trailing
spaces dropped), each on its own. Kernel threads never match, and neither do the
collector's own processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

COMMAND_LINE_BYTES = 4096
REPEAT_MAX = 1000  # RE2's limit on a repeat count; grep allows more.
_SPECIAL = ".[]()*+?{}|^$\\"
_CLASSES = frozenset(
    ("alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
     "upper", "xdigit")
)  # fmt: skip
_PERL_ESCAPES = {
    "d": "[0-9]", "D": "[^0-9]", "w": "[[:alnum:]_]", "W": "[^[:alnum:]_]",
    "s": "[[:space:]]", "S": "[^[:space:]]",
}  # fmt: skip


class FocusError(ValueError):
    """The pattern is not one the host and this side would read alike; says why."""


def focus_problem(focus: str) -> str | None:
    """Why ``focus`` cannot be used as ``--focus``, or None.

    >>> focus_problem("cuzk|lotus-worker") is None
    True
    >>> focus_problem("cuzk(")
    'not a usable pattern: ( at 5 is never closed'
    >>> print(focus_problem(r"cuzk-\\d+"))
    not a usable pattern: \\d is a Perl class that grep -E on the host reads as a plain d:
    write [0-9]
    """
    try:
        Focus.compile(focus)
    except FocusError as error:
        return f"not a usable pattern: {error}"
    return None


@dataclass(frozen=True)
class Focus:
    """A compiled ``--focus``; ``search`` runs in time linear in the text.

    >>> focus = Focus.compile("^cuzk( |$)")
    >>> focus.matches_process("cuzk", "/usr/bin/cuzk\\x00--daemon\\x00")
    True
    >>> focus.matches_process("bash", "bash\\x00-c\\x00cuzk\\x00"), focus.search("cuzk")
    (False, True)
    >>> Focus.compile("(a+)+$").search("a" * 40 + "!")
    False
    """

    pattern: str
    _regexp: Any

    @classmethod
    def compile(cls, pattern: str) -> Focus:
        """Compile ``pattern``; ``FocusError`` says why it cannot be used."""
        return cls(pattern=pattern, _regexp=_re2(_Translator(pattern).translate()))

    @classmethod
    def literal(cls, text: str) -> Focus:
        """``text`` matched as plain text: for a pattern of an older bundle that cannot be
        read as ``grep -E`` reads it.

        >>> Focus.literal("cuzk\\\\d").search("/bin/cuzk\\\\d --x")
        True
        """
        latin1 = text.encode("utf-8", "surrogateescape").decode("latin-1")
        return cls(pattern=text, _regexp=_re2("".join(_hex(char) for char in latin1)))

    def search(self, text: str) -> bool:
        """The pattern matches somewhere in ``text`` (read as its UTF-8 bytes)."""
        return self._regexp.search(text.encode("utf-8", "surrogateescape")) is not None

    def matches_process(self, name: str, cmdline: str) -> bool:
        """The pattern matches the process's name or its command line as the host reads
        them (``cmdline``: the raw ``/proc/PID/cmdline`` text, NULs included)."""
        return self.search(command_line_subject(name)) or self.search(command_line_subject(cmdline))


def command_line_subject(cmdline: str) -> str:
    """A command line (or a name) as the pattern sees it, on the host and here.

    >>> command_line_subject("sh\\x00-c\\x00echo a\\nb \\x00")
    'sh -c echo a b'
    """
    raw = cmdline.encode("utf-8", "surrogateescape")[:COMMAND_LINE_BYTES]
    text = raw.decode("utf-8", "surrogateescape")
    return text.replace("\x00", " ").replace("\n", " ").rstrip(" ")


def host_octal(pattern: str) -> str:
    """The pattern as ``printf %b`` octal escapes: it travels to the host inside the
    script, and no command line of ours holds it as text that it would match.

    >>> host_octal("cu")
    '\\\\0143\\\\0165'
    """
    return "".join(f"\\0{byte:03o}" for byte in pattern.encode())


class _Translator:
    """Read a POSIX ERE (bytes, as latin-1 characters) and write the same pattern for RE2;
    refuse what ``grep -E`` (GNU or busybox) and RE2 would read differently."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern.encode("utf-8", "surrogateescape").decode("latin-1")
        self.at = 0
        self.open_at: list[int] = []

    def translate(self) -> str:
        if not self.text:
            raise FocusError("an empty pattern matches every process")
        for bad, why in (("\n", "a newline"), ("\x00", "a NUL byte")):
            if bad in self.text:
                raise FocusError(f"it holds {why}: grep reads each line as a pattern of its own")
        out = self._alternatives()
        if self.at < len(self.text):
            raise FocusError(f") at {self.at + 1} closes nothing: write \\) for a literal one")
        return out

    def _alternatives(self) -> str:
        branches = [self._branch()]
        while self._peek() == "|":
            self.at += 1
            branches.append(self._branch())
        return "|".join(branches)

    def _branch(self) -> str:
        start = self.at
        pieces: list[str] = []
        while self.at < len(self.text) and self.text[self.at] not in "|)":
            pieces.append(self._piece())
        if not pieces and self.open_at and self.at >= len(self.text):
            raise FocusError(f"( at {self.open_at[-1]} is never closed")
        if not pieces:
            raise FocusError(
                f"an empty alternative at {start + 1} matches every process "
                "(busybox grep refuses it)"
            )
        return "".join(pieces)

    def _piece(self) -> str:
        position = self.at + 1
        atom, repeatable = self._atom()
        quantifier = self._quantifier()
        if quantifier is None:
            return atom
        if not repeatable:
            raise FocusError(
                f"{quantifier} at {self.at} repeats nothing: write \\{quantifier[0]} "
                "for a literal one"
            )
        if self._quantifier_ahead():
            raise FocusError(
                f"two repeats in a row after {position}: Perl reads *? +? ?? as lazy, grep -E "
                "as a repeat of a repeat; write one"
            )
        return atom + quantifier

    def _atom(self) -> tuple[str, bool]:
        char = self.text[self.at]
        position = self.at + 1
        if char in "*+?" or (char == "{" and self._interval_at(self.at) is not None):
            raise FocusError(
                f"{char} at {position} repeats nothing: write \\{char} for a literal one"
            )
        self.at += 1
        if char == "(":
            if self._peek() == "?":
                raise FocusError(
                    f"(? at {position} is Perl syntax (a flag such as (?i), a lookaround or a "
                    "non-capturing group) that grep -E does not have; for either case write "
                    "[Cc]uzk"
                )
            self.open_at.append(position)
            inner = self._alternatives()
            if self._peek() != ")":
                raise FocusError(f"( at {position} is never closed")
            self.at += 1
            self.open_at.pop()
            return f"({inner})", True
        if char == ")":
            raise FocusError(f") at {position} closes nothing: write \\) for a literal one")
        if char == "[":
            return self._bracket(position), True
        if char == "\\":
            return self._escape(position), True
        if char == "{":
            raise FocusError(
                f"{{ at {position} does not start a repeat count such as {{2,5}}: write \\{{ "
                "for a literal one"
            )
        if char == ".":
            return ".", True
        if char in "^$":
            return char, False
        return _literal(char), True

    def _escape(self, position: int) -> str:
        if self.at >= len(self.text):
            raise FocusError("it ends with a lone backslash")
        char = self.text[self.at]
        self.at += 1
        if char in _SPECIAL:
            return _literal(char)
        if char in _PERL_ESCAPES:
            return self._refuse_escape(
                char,
                f"a Perl class that grep -E on the host reads as a plain {char}: "
                f"write {_PERL_ESCAPES[char]}",
            )
        if char.isdigit():
            return self._refuse_escape(char, "a backreference, which RE2 does not have")
        if char in "bB<>`'":
            return self._refuse_escape(
                char, "a word or text boundary, which busybox grep and RE2 read differently"
            )
        return self._refuse_escape(
            char, f"no escape in grep -E (GNU grep warns, then reads a plain {char})"
        )

    @staticmethod
    def _refuse_escape(char: str, why: str) -> str:
        raise FocusError(f"\\{char} is {why}")

    def _quantifier(self) -> str | None:
        char = self._peek()
        if char in ("*", "+", "?"):
            self.at += 1
            return char
        if char == "{":
            interval = self._interval_at(self.at)
            if interval is None:
                raise FocusError(
                    f"{{ at {self.at + 1} does not start a repeat count such as {{2,5}}: "
                    "write \\{ for a literal one"
                )
            low, high, end = interval
            self.at = end
            if max(low, high or 0) > REPEAT_MAX:
                raise FocusError(f"a repeat count above {REPEAT_MAX}")
            if high is not None and high < low:
                raise FocusError(f"the repeat count {{{low},{high}}} runs backwards")
            if high == low:
                return f"{{{low}}}"
            return f"{{{low},{'' if high is None else high}}}"
        return None

    def _quantifier_ahead(self) -> bool:
        char = self._peek()
        return char in ("*", "+", "?") or (char == "{" and self._interval_at(self.at) is not None)

    def _interval_at(self, at: int) -> tuple[int, int | None, int] | None:
        """``{m}``, ``{m,}``, ``{m,n}`` or ``{,n}`` at ``at``: (low, high, end), else None."""
        close = self.text.find("}", at)
        if close < 0:
            return None
        body = self.text[at + 1 : close]
        low, comma, high = body.partition(",")
        if not (low.isdigit() or (comma and not low)) or not low.isascii():
            return None
        if high and not (high.isdigit() and high.isascii()):
            return None
        if not low and not high:
            return None
        lowest = int(low) if low else 0
        if not comma:
            return lowest, lowest, close + 1
        return lowest, int(high) if high else None, close + 1

    def _bracket(self, position: int) -> str:
        negated = self._peek() == "^"
        if negated:
            self.at += 1
        items: list[str] = []
        first = True
        while True:
            if self.at >= len(self.text):
                raise FocusError(f"[ at {position} is never closed")
            if self.text[self.at] == "]" and not first:
                self.at += 1
                break
            first = False
            low, is_class = self._bracket_element(position)
            ranged = self._peek() == "-" and self._peek(1) not in ("]", "")
            if is_class and ranged:
                raise FocusError(f"a range in [ at {position} starts at a class")
            if not ranged:
                items.append(low if is_class else _hex(low))
                continue
            self.at += 1
            high, high_is_class = self._bracket_element(position)
            if high_is_class:
                raise FocusError(f"a range in [ at {position} ends in a class")
            if ord(high) < ord(low):
                raise FocusError(f"the range {low}-{high} in [ at {position} runs backwards")
            items.append(f"{_hex(low)}-{_hex(high)}")
        return "[" + ("^" if negated else "") + "".join(items) + "]"

    def _bracket_element(self, position: int) -> tuple[str, bool]:
        """One character of a bracket expression, or a class such as ``[:digit:]`` (True)."""
        char = self.text[self.at]
        if char == "[" and self._peek(1) in (":", "=", "."):
            kind = self.text[self.at + 1]
            end = self.text.find(kind + "]", self.at + 2)
            if end < 0:
                raise FocusError(f"[{kind} in [ at {position} is never closed")
            name = self.text[self.at + 2 : end]
            self.at = end + 2
            if kind != ":":
                raise FocusError(
                    f"[{kind}{name}{kind}] in [ at {position} is a collating element or "
                    "equivalence class, which RE2 does not have"
                )
            if name not in _CLASSES:
                known = ", ".join(sorted(_CLASSES))
                raise FocusError(f"[:{name}:] is not a character class ({known})")
            return f"[:{name}:]", True
        self.at += 1
        return char, False

    def _peek(self, ahead: int = 0) -> str:
        index = self.at + ahead
        return self.text[index] if index < len(self.text) else ""


def _re2(translated: str) -> Any:
    """Compile an RE2 pattern written by ``_Translator``: bytes (latin-1), POSIX syntax."""
    # Loaded when a pattern is compiled: declaring --focus (every command's --help) needs
    # none of it.
    import re2

    options = re2.Options()
    options.posix_syntax = True
    options.longest_match = True
    options.one_line = True
    options.log_errors = False
    options.encoding = re2.Options.Encoding.LATIN1
    try:
        return re2.compile(translated.encode("latin-1"), options)
    except re2.error as error:
        raise FocusError(_re2_reason(error)) from None


def _literal(char: str) -> str:
    return char if char.isascii() and char.isalnum() else _hex(char)


def _hex(char: str) -> str:
    return f"\\x{ord(char):02x}"


def _re2_reason(error: Exception) -> str:
    detail = error.args[0] if error.args else error
    if isinstance(detail, bytes):
        detail = detail.decode("latin-1")
    return f"RE2 cannot run it: {detail}"


class FocusProcess(BaseModel):
    """A process that matched ``--focus`` on the host, as a probe's section showed it."""

    pid: int
    name: str | None = None
    state: str | None = Field(default=None, description="R, S, D, Z, ... as in /proc/PID/stat.")
    started: datetime | None = Field(default=None, description="UTC; from starttime and btime.")
    raw_line: int = Field(description="Line of its first record in the section.")
    cgroup_v1: str | None = Field(default=None, description="Its memory cgroup (v1).")
    cgroup_v2: str | None = Field(default=None, description="Its cgroup (v2).")

    @property
    def alive(self) -> bool:
        """Running or sleeping: not a zombie and not dead."""
        return self.state not in ("Z", "X", "x")


def parse_focus_line(
    line: str, raw_line: int, boot_time: datetime | None, clock_ticks: int
) -> FocusProcess | None:
    """Read a ``focus_pid PID STAT`` line (``focus-pid`` in bundles of earlier versions);
    None when it is not one.

    The process name sits between the first ``(`` and the *last* ``)``: names may hold
    spaces and parentheses.

    >>> from datetime import UTC
    >>> boot = datetime(2025, 11, 29, 18, 40, tzinfo=UTC)
    >>> stat = "4242 (cuzk) d) Z 1 4242 4242 0 -1 4194564 9 0 0 0 5 1 0 0 20 0 1 0 840000 0"
    >>> p = parse_focus_line("focus_pid 4242 " + stat, 7, boot, 100)
    >>> p.pid, p.name, p.state, p.started.isoformat(), p.alive
    (4242, 'cuzk) d', 'Z', '2025-11-29T21:00:00+00:00', False)
    >>> parse_focus_line("focus-pid x", 1, None, 100) is None
    True
    >>> parse_focus_line("focus-pid 1 " + stat.replace("840000", "9" * 20), 7, boot, 100).started

    """
    words = line.split(" ", 2)
    if len(words) < 3 or words[0] not in ("focus_pid", "focus-pid") or not words[1].isdigit():
        return None
    stat = words[2]
    process = FocusProcess(pid=int(words[1]), raw_line=raw_line)
    if "(" in stat and ")" in stat:
        process.name = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = stat[stat.rindex(")") + 1 :].split()
        if rest:
            process.state = rest[0][:1]
        # starttime is field 22 of the stat line, the 20th after the name.
        if len(rest) >= 20 and rest[19].isdigit() and boot_time is not None and clock_ticks > 0:
            process.started = _after_boot(boot_time, int(rest[19]) / clock_ticks)
    return process


def _after_boot(boot_time: datetime, seconds: float) -> datetime | None:
    try:
        return boot_time + timedelta(seconds=seconds)
    except OverflowError:
        return None
