"""Find where a shell script loses the exit status it acts on (pure: text in, issues out).

ShellCheck 0.9-0.11 flags single symptoms (SC2181, SC2319, SC2320, SC2155) but not the
chain that hid the crash in the story: ``if ! daemon | tee log; then echo "exit $?"``
(the ``!`` makes ``$?`` 0), a pipeline into ``tee`` without ``pipefail``, ``$?`` read
after another command, ``daemon || true`` under ``set -e``, and a retry loop that decides
on such a value. Each rule below names the pattern, says why in one sentence, and shows
the corrected line. Semantics as in FORMATS.md §8 (bash 5.2 observed).

>>> script = '''#!/usr/bin/env bash
... set -euo pipefail
... for attempt in 1 2 3; do
...   if ! ./daemon --port 9000 | tee -a bench.log; then
...     echo "daemon exited with $?"
...     rc=$?
...   fi
...   if [ "${rc:-0}" -eq 0 ]; then break; fi
...   sleep 10
... done
... '''
>>> analysis = find_masking(script)
>>> [(issue.line, issue.pattern) for issue in analysis.issues]
[(5, 'negated_status_read'), (6, 'negated_status_read'), (8, 'retry_on_masked_status')]
>>> print(analysis.issues[0].corrected)
rc=${PIPESTATUS[0]}; echo "daemon exited with $rc"
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from forensics.core.focus import Focus, FocusError
from forensics.shell.syntax import (
    AndOr,
    Command,
    Compound,
    Pipeline,
    Simple,
    Token,
    assignment_name,
    command_name,
    command_words,
    outer_text,
    parse_script,
    unquote,
)

EXCERPT_CHARS = 200
_TEXT_CHARS = 60
# How far back a `$?` read looks for the command it meant: enough for any run of `echo`s,
# and it keeps the walk linear on long scripts.
_CHAIN_KEPT = 32

# Commands whose own status nobody means to test: reading `$?` after them reads theirs.
_NOISE = frozenset(
    {"echo", "printf", "print", "log", "logger", "sleep", "date", "true", ":", "cd", "pushd",
     "popd", "mkdir", "rm", "touch", "sync", "trap", "set", "shopt", "shift", "export",
     "local", "declare", "typeset", "readonly", "unset", "tput", "clear", "say", "info",
     "warn", "note", "msg", "debug", "notice"}
)  # fmt: skip
_LOG_FUNCTION = re.compile(r"^(log|msg|info|warn|debug|note|notice|say|print|echo)[_a-z0-9-]*$")
# Last commands of a pipeline that only carry output away: their status says nothing about
# the command that feeds them. Filters with logic of their own (grep, awk, sed, a `while
# read` loop) are left out: there the last status is often the one meant.
_LOG_SINKS = frozenset(
    {"tee", "logger", "ts", "rotatelogs", "multilog", "svlogd", "cronolog", "s6-log"}
)
_SINKS = _LOG_SINKS | {"cat"}
# Commands that set a status on purpose: `...; true; fi; log_end $?` means 0.
_DELIBERATE = frozenset({"true", "false", ":"})
_DECLARATIONS = frozenset({"local", "declare", "typeset", "readonly", "export"})
_LOOP_CONTROL = frozenset({"break", "continue", "return", "exit"})
_HAS_PIPESTATUS = frozenset({"bash", "mksh", "unknown"})
_NO_PIPEFAIL = frozenset({"dash"})
_STATUS_READ = re.compile(r"\$(\?|\{\?\})")
_PIPESTATUS_READ = re.compile(r"\b(PIPESTATUS|pipestatus)\b")
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ash", "busybox", "ksh", "mksh"})


class MaskingIssue(BaseModel):
    """One place where the script acts on an exit status it no longer has."""

    model_config = ConfigDict(frozen=True)

    pattern: str = Field(description="Stable id of the rule, e.g. negated_status_read.")
    title: str = Field(description="The pattern in a few words.")
    line: int = Field(ge=1, description="1-based line of the script where it bites.")
    related_lines: list[int] = Field(default_factory=list, description="Lines that feed it.")
    excerpt: str = Field(description="The line as written (cut at 200 characters).")
    explanation: str
    corrected: str = Field(description="The corrected line(s).")
    masked_variable: str | None = Field(
        default=None, description="The variable that carries the masked status onward."
    )


class MaskingAnalysis(BaseModel):
    dialect: str = Field(description="bash, sh, dash, busybox, zsh, ... or unknown.")
    errexit: bool = Field(description="set -e is in effect somewhere (option, shebang, `set`).")
    pipefail: bool = Field(description="pipefail is in effect somewhere.")
    issues: list[MaskingIssue] = Field(default_factory=list)


_TITLES = {
    "negated_status_read": "`if ! cmd | tee` then `$?`",
    "pipeline_without_pipefail": "`cmd | tee` without pipefail",
    "status_read_late": "`$?` read after another command",
    "pipestatus_read_late": "`PIPESTATUS` read after another command",
    "status_discarded": "`cmd || true` around the daemon",
    "retry_on_masked_status": "retry loop on a masked status",
}


def find_masking(
    text: str,
    *,
    interpreter: str | None = None,
    interpreter_options: Sequence[str] = (),
    supervised: Sequence[str] = (),
    focus: str | None = None,
) -> MaskingAnalysis:
    """Analyse ``text``; never raises.

    ``interpreter`` and ``interpreter_options`` come from the process's command line when
    known (``bash -o pipefail x.sh``); ``supervised`` names the commands the script is
    known to run (a zombie child's name) and ``focus`` is the operator's regex: a
    ``|| true`` around one of them is the daemon's status thrown away.
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]
    program = parse_script(text)
    dialect = _dialect(interpreter, lines[0] if lines else "")
    settings = _Settings.read(program, lines[0] if lines else "", interpreter_options)
    walker = _Walker(lines, settings, dialect, _daemon_matcher(supervised, focus))
    walker.walk_list(program, [_Marker("start", None, 1)])
    walker.find_retry_loops(program)
    issues = sorted(walker.issues.values(), key=lambda issue: (issue.line, issue.pattern))
    return MaskingAnalysis(
        dialect=dialect,
        errexit=settings.ever("errexit"),
        pipefail=settings.ever("pipefail"),
        issues=issues,
    )


def _dialect(interpreter: str | None, first_line: str) -> str:
    if interpreter:
        name = interpreter.rsplit("/", 1)[-1]
        return name if name in _SHELLS else "unknown"
    words = first_line[2:].split() if first_line.startswith("#!") else []
    words = [word for word in words if not word.startswith("-")]
    if words and words[0].rsplit("/", 1)[-1] == "env":
        words = [word for word in words[1:] if "=" not in word]
    if words and words[0].rsplit("/", 1)[-1] in _SHELLS:
        return words[0].rsplit("/", 1)[-1]
    return "unknown"


def _daemon_matcher(supervised: Sequence[str], focus: str | None) -> Callable[[str], bool] | None:
    """Whether a command's text names the daemon: a supervised name, or ``--focus`` matched
    as everywhere else (``forensics/core/focus.py``; a pattern it refuses is left out)."""
    names = [name for name in supervised if name]
    try:
        pattern = Focus.compile(focus) if focus else None
    except FocusError:
        pattern = None
    if not names and pattern is None:
        return None

    def names_daemon(text: str) -> bool:
        return any(name in text for name in names) or (pattern is not None and pattern.search(text))

    return names_daemon


@dataclass
class _Settings:
    """When errexit and pipefail are on, by line: the textual order of ``set`` commands,
    starting from the interpreter's options and the shebang line."""

    events: dict[str, list[tuple[int, bool]]]

    @classmethod
    def read(cls, program: list[AndOr], shebang: str, options: Sequence[str]) -> _Settings:
        events: dict[str, list[tuple[int, bool]]] = {"errexit": [], "pipefail": []}
        for option, value in _option_changes(list(options)):
            events.setdefault(option, []).append((0, value))
        if shebang.startswith("#!"):
            words = shebang[2:].split()
            for option, value in _option_changes([w for w in words[1:] if w[:1] in "-+"]):
                events.setdefault(option, []).append((0, value))
        for command in _simple_commands(program):
            words = [unquote(token.text) for token in command.words]
            if words and words[0] == "set":
                changes = _option_changes(words[1:])
            elif words[:1] == ["shopt"] and "o" in (flags := _flags(words[1:])):
                value = "s" in flags
                changes = [(word, value) for word in words[1:] if not word.startswith("-")]
            else:
                continue
            for option, value in changes:
                events.setdefault(option, []).append((command.line, value))
        for timeline in events.values():
            timeline.sort(key=lambda change: change[0])
        return cls(events)

    def at(self, option: str, line: int) -> bool:
        changes = self.events.get(option, [])
        index = bisect.bisect_right([at for at, _ in changes], line)
        return changes[index - 1][1] if index else False

    def ever(self, option: str) -> bool:
        return any(value for _, value in self.events.get(option, []))


def _flags(words: list[str]) -> str:
    return "".join(word[1:] for word in words if word.startswith("-"))


def _option_changes(words: list[str]) -> list[tuple[str, bool]]:
    """``set``-style arguments to (option, on) pairs.

    >>> _option_changes(["-euo", "pipefail", "+o", "errexit", "-x"])
    [('errexit', True), ('nounset', True), ('pipefail', True), ('errexit', False)]
    """
    changes: list[tuple[str, bool]] = []
    letters = {"e": "errexit", "u": "nounset"}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--" or len(word) < 2 or word[0] not in "-+" or word.startswith("--"):
            continue
        value = word[0] == "-"
        for letter in word[1:]:
            if letter in letters:
                changes.append((letters[letter], value))
            elif letter == "o" and index < len(words):
                changes.append((words[index], value))
                index += 1
    return changes


def _simple_commands(items: list[AndOr]) -> Iterator[Simple]:
    for item in items:
        for pipeline in item.pipelines:
            for command in pipeline.commands:
                if isinstance(command, Simple):
                    yield command
                else:
                    for list_ in _lists(command):
                        yield from _simple_commands(list_)


def _lists(command: Compound) -> list[list[AndOr]]:
    return [part for clause in command.clauses for part in clause] + command.bodies


@dataclass(frozen=True)
class _Marker:
    """What precedes the first command of a list: ``start`` (unknown), ``negated`` (the
    branch of ``if ! P``/``while ! P``), ``branch`` or ``else`` of a condition."""

    kind: str
    condition: AndOr | None
    line: int


_Unit = AndOr | _Marker


class _Walker:
    def __init__(
        self,
        lines: list[str],
        settings: _Settings,
        dialect: str,
        daemon: Callable[[str], bool] | None,
    ) -> None:
        self.lines = lines
        self.settings = settings
        self.dialect = dialect
        self.daemon = daemon
        self.issues: dict[tuple[int, str], MaskingIssue] = {}
        self.masked_variables: dict[str, MaskingIssue] = {}
        self.masked_read_lines: set[int] = set()

    # -- walking in execution order -------------------------------------------------

    def walk_list(self, items: list[AndOr], prefix: list[_Unit], condition: bool = False) -> None:
        """Visit ``items`` in order; ``condition`` lists (after if/while) are exempt from
        `set -e`, so the errexit rule does not apply to them."""
        chain = prefix[-_CHAIN_KEPT:]
        for index, item in enumerate(items):
            following = items[index + 1] if index + 1 < len(items) else None
            self.visit_and_or(item, chain, None if condition else following, condition)
            chain.append(item)
            if len(chain) > 2 * _CHAIN_KEPT:
                del chain[:-_CHAIN_KEPT]

    def visit_and_or(
        self, item: AndOr, chain: list[_Unit], following: AndOr | None, condition: bool
    ) -> None:
        self.visit_pipeline(item.first, chain)
        for index, (_, pipeline) in enumerate(item.rest):
            operand = AndOr(first=item.pipelines[index])
            self.visit_pipeline(pipeline, [*chain, _Marker("operand", operand, operand.line)])
        swallowed = _swallowed(item)
        if swallowed:
            self.check_discarded(item)
        elif item.rest and _is_sink_pipeline(item.first):
            self.sink_without_pipefail(item.first, "the `&&`/`||` after it sees success")
        elif (
            not condition
            and not item.rest
            and not item.background
            and _is_sink_pipeline(item.first, _LOG_SINKS)
            and self.settings.at("errexit", item.line)
            and not (following is not None and _reads_pipestatus(following.first))
        ):
            self.sink_without_pipefail(item.first, "`set -e` does not stop")

    def visit_pipeline(self, pipeline: Pipeline, chain: list[_Unit]) -> None:
        for command in pipeline.commands:
            if isinstance(command, Simple):
                self.check_reads(command, command.words, chain)
            else:
                self.visit_compound(command, chain)

    def visit_compound(self, command: Compound, chain: list[_Unit]) -> None:
        if command.kind == "if":
            previous: AndOr | None = None
            for index, (condition, body) in enumerate(command.clauses):
                entry: list[_Unit] = chain if index == 0 else [_Marker("else", previous, 1)]
                self.walk_list(condition, entry, condition=True)
                last = condition[-1] if condition else None
                self.check_condition(last, "if")
                kind = "negated" if last is not None and _negated(last) else "branch"
                self.walk_list(body, [_Marker(kind, last, last.line if last else command.line)])
                previous = last
            for body in command.bodies:
                self.walk_list(body, [_Marker("else", previous, command.line)])
        elif command.kind in ("while", "until"):
            for condition, body in command.clauses:
                self.walk_list(condition, [_Marker("start", None, command.line)], condition=True)
                last = condition[-1] if condition else None
                self.check_condition(last, command.kind)
                negated = command.kind == "while" and last is not None and _negated(last)
                marker = _Marker("negated" if negated else "branch", last, command.line)
                self.walk_list(body, [marker])
        elif command.kind in ("for", "case"):
            self.check_reads(None, command.words, chain)
            for body in command.bodies:
                self.walk_list(body, [_Marker("start", None, command.line)])
        elif command.kind == "function":
            for body in command.bodies:
                self.walk_list(body, [_Marker("start", None, command.line)])
        else:
            for body in command.bodies:
                self.walk_list(body, chain)

    # -- the rules --------------------------------------------------------------------

    def check_reads(
        self, command: Simple | None, words: Sequence[Token], chain: list[_Unit]
    ) -> None:
        texts = [outer_text(word.text) for word in words]
        line = command.line if command is not None else (words[0].line if words else 1)
        if any(_STATUS_READ.search(text) for text in texts):
            issue = self.status_issue(chain, line)
            if issue is not None:
                self.remember(issue, command)
        if command is not None and any(_PIPESTATUS_READ.search(text) for text in texts):
            issue = self.pipestatus_issue(chain, line)
            if issue is not None:
                self.remember(issue, command)

    def remember(self, issue: MaskingIssue, command: Simple | None) -> None:
        variable = _assigned_variable(command, issue.pattern) if command is not None else None
        if variable is not None:
            issue = issue.model_copy(update={"masked_variable": variable})
            self.masked_variables[variable] = issue
        self.masked_read_lines.add(issue.line)
        self.add(issue)

    def add(self, issue: MaskingIssue) -> None:
        self.issues.setdefault((issue.line, issue.pattern), issue)

    def status_issue(self, chain: list[_Unit], line: int) -> MaskingIssue | None:
        unit = chain[-1]
        if isinstance(unit, _Marker) and unit.kind == "operand" and unit.condition is not None:
            return self.sink_read(unit.condition, line)  # `a || echo $?`: a's status, as meant
        if isinstance(unit, _Marker):
            return self.negated_read(unit, None, line) if unit.kind == "negated" else None
        if _swallowed(unit):
            left = _text(unit.pipelines[:-1])
            return self.issue(
                "status_discarded",
                line,
                [unit.line],
                f"`{left} || {_swallow_word(unit)}` on line {unit.line} always succeeds, so "
                "`$?` here is 0 whatever the command's exit status was.",
                f"rc=0; {_text(unit.pipelines[:-1], limit=None)} || rc=$?",
            )
        if _is_noise(unit):
            real = next((u for u in reversed(chain) if not _is_noise(u)), None)
            if isinstance(real, _Marker) and real.kind == "negated":
                return self.negated_read(real, unit, line)
            if isinstance(real, AndOr):
                return self.read_late(unit, real, line)
            return None
        compound = _single_compound(unit)
        if compound is not None and compound.kind == "if":
            return self.read_after_if(compound, line)
        if compound is not None and compound.kind in ("while", "until", "for"):
            return self.read_after_loop(compound, line)
        return self.sink_read(unit, line)

    def sink_read(self, unit: AndOr, line: int) -> MaskingIssue | None:
        """`$?` right after ``unit``: masked only when it is `cmd | tee` without pipefail."""
        if (
            _is_sink_pipeline(unit.first)
            and not unit.rest
            and not self.settings.at("pipefail", unit.line)
        ):
            self.sink_without_pipefail(unit.first, f"`$?` on line {line} is 0")
            sink = _first_name_of(unit.first.commands[-1])
            if self.dialect in _HAS_PIPESTATUS:
                corrected = f"rc=${{PIPESTATUS[0]}}   # directly after line {unit.line}"
            else:
                corrected = f"set -o pipefail   # before line {unit.line}" + self.pipefail_note()
            return self.issue(
                "pipeline_without_pipefail",
                line,
                [unit.line],
                f"`$?` here is the status of `{sink}`, the last command of the pipeline on line "
                f"{unit.line}, not of `{_first_name(unit.first)}`: without pipefail only the "
                "last command counts.",
                corrected,
            )
        return None

    def negated_read(self, marker: _Marker, since: AndOr | None, line: int) -> MaskingIssue:
        condition = marker.condition
        pipeline = condition.first if condition is not None else None
        shown = _text([pipeline], negation=False) if pipeline is not None else "the condition"
        first = _first_name(pipeline) if pipeline is not None else "the command"
        explanation = (
            f"`!` inverts the status of `{shown}` (line {marker.line}), so in this branch "
            f"`$?` is 0, never the exit status of `{first}`"
        )
        if since is not None:
            explanation += f"; and `{_text(since.pipelines)}` (line {since.line}) ran since"
        if self.dialect in _HAS_PIPESTATUS:
            rest = _replace_status(self.line_text(line), "rc")
            if since is None:
                corrected = "rc=${PIPESTATUS[0]}" + (f"; {rest}" if rest else "")
            else:
                corrected = (
                    f"rc=${{PIPESTATUS[0]}}   # first line after `then` (line {marker.line})"
                )
                corrected += f"\n{rest}" if rest else ""
        else:
            corrected = f"if {shown}; then :; else rc=$?; fi" + self.pipefail_note()
        return self.issue("negated_status_read", line, [marker.line], explanation + ".", corrected)

    def read_late(self, unit: AndOr, real: AndOr, line: int) -> MaskingIssue:
        compound = _single_compound(real)
        if compound is not None:
            shown = f"the `{compound.kind}` of line {compound.line}"
            corrected = f"rc=$?   # directly after line {compound.end_line}, before anything else"
        else:
            shown = f"`{_text(real.pipelines)}` (line {real.line})"
            corrected = f"rc=0; {_text(real.pipelines, limit=None)} || rc=$?   # line {real.line}"
        rest = _replace_status(self.line_text(line), "rc")
        return self.issue(
            "status_read_late",
            line,
            [real.line, unit.line],
            f"`$?` here is the status of `{_text(unit.pipelines)}` (line {unit.line}), not of "
            f"{shown}: every command, `echo` included, replaces `$?`.",
            corrected + (f"\n{rest}" if rest else ""),
        )

    def read_after_if(self, compound: Compound, line: int) -> MaskingIssue | None:
        endings = [body[-1] for _, body in compound.clauses if body]
        endings += [body[-1] for body in compound.bodies if body]
        noisy = [item for item in endings if _is_noise(item, deliberate=False)]
        if not noisy:
            return None
        condition = compound.clauses[0][0] if compound.clauses else []
        shown = _text(condition[-1].pipelines) if condition else "the condition"
        return self.issue(
            "status_read_late",
            line,
            [compound.line],
            f"After `fi`, `$?` is the status of the last command run inside the `if` of line "
            f"{compound.line} (such as `{_text(noisy[0].pipelines)}`, line {noisy[0].line}), "
            f"or 0 when no branch ran, not the status of `{shown}`.",
            f'rc=0; {shown.removeprefix("! ")} || rc=$?   # then test "$rc"',
        )

    def read_after_loop(self, compound: Compound, line: int) -> MaskingIssue | None:
        bodies = [body for _, body in compound.clauses] + compound.bodies
        last = next((body[-1] for body in reversed(bodies) if body), None)
        if last is None or not _is_noise(last, deliberate=False):
            return None
        return self.issue(
            "status_read_late",
            line,
            [compound.line, last.line],
            f"After `done`, `$?` is the status of `{_text(last.pipelines)}` (line {last.line}), "
            "the last command the loop ran, or 0 when it never ran.",
            "rc=$?   # right after the command inside the loop whose status matters",
        )

    def pipestatus_issue(self, chain: list[_Unit], line: int) -> MaskingIssue | None:
        unit = chain[-1]
        if isinstance(unit, _Marker):
            return None
        if not unit.rest and len(unit.first.commands) > 1:
            return None
        if unit.rest and len(unit.first.commands) > 1:
            pipeline, now = (
                unit.first,
                f"`{_text(unit.pipelines[1:])}` when `{_text([unit.first])}` failed",
            )
        else:
            earlier = next(
                (
                    u
                    for u in reversed(chain[:-1])
                    if isinstance(u, AndOr) and len(u.first.commands) > 1
                ),
                None,
            )
            if earlier is None:
                return None
            pipeline, now = earlier.first, f"`{_text(unit.pipelines)}` (line {unit.line})"
        shown = _text([pipeline])
        capture = f'{shown}; ps=("${{PIPESTATUS[@]}}")'
        if self.settings.at("errexit", pipeline.line):
            capture = f"set +e; {capture}; set -e"
        return self.issue(
            "pipestatus_read_late",
            line,
            [pipeline.line],
            f"`PIPESTATUS` describes the most recent pipeline, here {now}, not "
            f"`{shown}` (line {pipeline.line}).",
            capture,
        )

    def check_condition(self, last: AndOr | None, keyword: str) -> None:
        if last is not None and not last.rest and _is_sink_pipeline(last.first):
            if last.first.negated:
                consumer = f"this `{keyword} !` never takes its failure branch:"
            else:
                consumer = f"this `{keyword}` sees success"
            self.sink_without_pipefail(last.first, consumer)

    def sink_without_pipefail(self, pipeline: Pipeline, consumer: str) -> None:
        """``consumer`` completes "so ... even when X fails": who acts on tee's status."""
        if self.settings.at("pipefail", pipeline.line):
            return
        sink = _first_name_of(pipeline.commands[-1])
        shown = _text([pipeline], negation=False)
        if self.dialect in _NO_PIPEFAIL:
            corrected = "#!/bin/bash, then set -o pipefail   # dash has no pipefail"
        else:
            corrected = f"set -o pipefail   # before line {pipeline.line}" + self.pipefail_note()
        if self.dialect in _HAS_PIPESTATUS and "$?" in consumer:
            corrected += f"\nrc=${{PIPESTATUS[0]}}   # or this, directly after line {pipeline.line}"
        self.add(
            self.issue(
                "pipeline_without_pipefail",
                pipeline.line,
                [],
                f"Without `set -o pipefail` the status of `{shown}` is that of `{sink}`, so "
                f"{consumer} even when `{_first_name(pipeline)}` fails (exit 42 reads as 0).",
                corrected,
            )
        )

    def check_discarded(self, item: AndOr) -> None:
        left = item.pipelines[:-1]
        looks_like_daemon = any(_is_sink_pipeline(p) for p in left) or (
            self.daemon is not None and any(self.daemon(_text([p])) for p in left)
        )
        if not looks_like_daemon:
            return
        shown = _text(left)
        errexit = self.settings.at("errexit", item.line)
        consequence = (
            "`set -e` never stops the script on it"
            if errexit
            else "nothing after it can tell a crash"
        )
        self.add(
            self.issue(
                "status_discarded",
                item.line,
                [],
                f"`|| {_swallow_word(item)}` turns every exit status of `{shown}` into success, "
                f"so {consequence} and `$?` after it is always 0.",
                f'rc=0; {_text(left, limit=None)} || rc=$?   # then act on "$rc"',
            )
        )

    # -- retry loops -------------------------------------------------------------------

    def find_retry_loops(self, items: list[AndOr]) -> None:
        if not self.masked_variables and not self.masked_read_lines:
            return
        for loop in _loops(items):
            for condition, _ in loop.clauses:
                for item in condition:
                    self.check_decision(item, loop, always=True)
            for body in [body for _, body in loop.clauses] + loop.bodies:
                for item, controls in _decisions(body):
                    self.check_decision(item, loop, always=controls)

    def check_decision(self, item: AndOr, loop: Compound, always: bool) -> None:
        if not always and not any(_controls_loop(p) for p in item.pipelines):
            return
        for command in _commands(item):
            source = self.masked_source(command)
            if source is None:
                continue
            variable = source.masked_variable
            what = f"`${variable}`" if variable and source.line != command.line else "`$?`"
            self.add(
                self.issue(
                    "retry_on_masked_status",
                    command.line,
                    [source.line, loop.line],
                    f"The loop of line {loop.line} decides whether to retry on {what}, which "
                    f"line {source.line} filled from a masked status ({source.title}), so a "
                    "crash looks like success and the loop never retries.",
                    source.corrected,
                )
            )
            return

    def masked_source(self, command: Simple) -> MaskingIssue | None:
        texts = [outer_text(token.text) for token in command.words]
        if command.line in self.masked_read_lines and any(_STATUS_READ.search(t) for t in texts):
            return next(
                (issue for (line, _), issue in self.issues.items() if line == command.line), None
            )
        arithmetic = (command_name(command) or "") in ("[[", "let") or any(
            t.startswith("((") for t in texts
        )
        for variable, issue in self.masked_variables.items():
            reference = re.compile(
                rf"\b{variable}\b" if arithmetic else rf"\$\{{?{re.escape(variable)}\b"
            )
            if any(reference.search(text) for text in texts):
                return issue
        return None

    # -- wording ------------------------------------------------------------------------

    def issue(
        self, pattern: str, line: int, related: list[int], explanation: str, corrected: str
    ) -> MaskingIssue:
        return MaskingIssue(
            pattern=pattern,
            title=_TITLES[pattern],
            line=max(line, 1),
            related_lines=sorted({r for r in related if r >= 1 and r != line}),
            excerpt=self.line_text(line).strip()[:EXCERPT_CHARS],
            explanation=explanation,
            corrected=corrected,
        )

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else ""

    def pipefail_note(self) -> str:
        if self.dialect in ("sh", "unknown"):
            return "   # needs pipefail: bash, busybox sh, zsh, ksh (dash 0.5.12 has none)"
        return ""


def _negated(item: AndOr) -> bool:
    return not item.rest and item.first.negated


def _swallowed(item: AndOr) -> bool:
    if not item.rest or item.rest[-1][0] != "||":
        return False
    last = item.rest[-1][1]
    if len(last.commands) != 1 or not isinstance(last.commands[0], Simple):
        return False
    words = [unquote(token.text) for token in last.commands[0].words]
    return words in (["true"], [":"], ["/bin/true"], ["/usr/bin/true"])


def _swallow_word(item: AndOr) -> str:
    command = item.rest[-1][1].commands[0]
    return " ".join(t.text for t in command.words) if isinstance(command, Simple) else "true"


def _is_noise(unit: _Unit, deliberate: bool = True) -> bool:
    """A command whose own status nobody means to test (``echo``, ``log``, ``x=1``);
    ``deliberate=False`` leaves out ``true``/``false``/``:``, used to set a status."""
    if isinstance(unit, _Marker) or unit.rest or unit.first.negated or not unit.first.commands:
        return False
    *feeders, last = unit.first.commands
    if feeders:  # `echo done | tee -a log` says nothing either
        return _is_noise(AndOr(first=Pipeline([*feeders], False, unit.line)), deliberate) and (
            isinstance(last, Simple) and (_first_name_of(last) or "") in _SINKS
        )
    command = last
    if not isinstance(command, Simple):
        return False
    words = [token.text for token in command.words]
    names = command_words(command)
    if not names:
        return not any("$(" in word or "`" in word for word in words)
    name = names[0].rsplit("/", 1)[-1]
    if not deliberate and name in _DELIBERATE:
        return False
    return name in _NOISE or bool(_LOG_FUNCTION.match(name))


def _is_sink_pipeline(pipeline: Pipeline, sinks: frozenset[str] = _SINKS) -> bool:
    if len(pipeline.commands) < 2:
        return False
    last = pipeline.commands[-1]
    if isinstance(last, Compound) or (_first_name_of(last) or "") not in sinks:
        return False
    feeders = pipeline.commands[:-1]
    return not all(isinstance(c, Simple) and (_first_name_of(c) or "") in _NOISE for c in feeders)


def _reads_pipestatus(pipeline: Pipeline) -> bool:
    return any(
        _PIPESTATUS_READ.search(outer_text(token.text))
        for command in pipeline.commands
        if isinstance(command, Simple)
        for token in command.words
    )


def _single_compound(unit: AndOr) -> Compound | None:
    if unit.rest or len(unit.first.commands) != 1:
        return None
    command = unit.first.commands[0]
    return command if isinstance(command, Compound) else None


def _first_name_of(command: Command) -> str | None:
    name = command_name(command)
    return name.rsplit("/", 1)[-1] if name else None


def _first_name(pipeline: Pipeline) -> str:
    if not pipeline.commands:
        return "the command"
    return command_name(pipeline.commands[0]) or "the command"


def _text(
    pipelines: Sequence[Pipeline], negation: bool = True, limit: int | None = _TEXT_CHARS
) -> str:
    parts = []
    for pipeline in pipelines:
        commands = []
        for command in pipeline.commands:
            if isinstance(command, Simple):
                commands.append(" ".join([t.text for t in command.words] + command.redirects))
            else:
                commands.append(f"{command.kind} ... (line {command.line})")
        parts.append(("! " if pipeline.negated and negation else "") + " | ".join(commands))
    text = " || ".join(parts).replace("\n", " ")
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


def _replace_status(line: str, variable: str) -> str:
    """The line reading ``$variable`` instead of ``$?``; empty when that would leave a
    bare ``variable=$variable``."""
    replaced = _STATUS_READ.sub(f"${variable}", line).strip()
    return "" if replaced in (f"{variable}=${variable}", f'{variable}="${variable}"') else replaced


def _assigned_variable(command: Simple, pattern: str) -> str | None:
    for token in command.words:
        text = outer_text(token.text)
        reads = _PIPESTATUS_READ if pattern == "pipestatus_read_late" else _STATUS_READ
        if reads.search(text):
            name = assignment_name(token.text)
            if name is not None:
                return name
    return None


def _loops(items: list[AndOr]) -> Iterator[Compound]:
    for item in items:
        for pipeline in item.pipelines:
            for command in pipeline.commands:
                if isinstance(command, Compound):
                    if command.kind in ("while", "until", "for"):
                        yield command
                    for list_ in _lists(command):
                        yield from _loops(list_)


def _decisions(items: list[AndOr]) -> Iterator[tuple[AndOr, bool]]:
    """Every condition in ``items`` with whether it decides the loop: an ``if`` whose
    branches break, continue, return or exit, or an ``&&``/``||`` list that does."""
    for item in items:
        yield item, False
        for pipeline in item.pipelines:
            for command in pipeline.commands:
                if not isinstance(command, Compound) or command.kind in ("function",):
                    continue
                if command.kind == "if":
                    branches = [body for _, body in command.clauses] + command.bodies
                    controls = any(_list_controls_loop(body) for body in branches)
                    for condition, _ in command.clauses:
                        for part in condition:
                            yield part, controls
                for list_ in [body for _, body in command.clauses] + command.bodies:
                    if command.kind not in ("while", "until", "for"):
                        yield from _decisions(list_)


def _list_controls_loop(items: list[AndOr]) -> bool:
    return any(_controls_loop(p) for item in items for p in item.pipelines)


def _controls_loop(pipeline: Pipeline) -> bool:
    for command in pipeline.commands:
        if isinstance(command, Simple):
            if (_first_name_of(command) or "") in _LOOP_CONTROL:
                return True
        elif command.kind in ("group", "if", "case", "subshell") and any(
            _list_controls_loop(list_) for list_ in _lists(command)
        ):
            return True
    return False


def _commands(item: AndOr) -> Iterator[Simple]:
    for pipeline in item.pipelines:
        for command in pipeline.commands:
            if isinstance(command, Simple):
                yield command
