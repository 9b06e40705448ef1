"""Find where a shell script loses the exit status it acts on (pure: text in, issues out).

ShellCheck 0.9-0.11 flags single symptoms (SC2181, SC2319, SC2320, SC2155) but not the
chain that hid the crash in the story: ``if ! daemon | tee log; then echo "exit $?"``
(the ``!`` makes ``$?`` 0), a pipeline into ``tee`` without ``pipefail``, ``$?`` read
after another command, ``daemon || true`` under ``set -e``, and a retry loop that decides
on such a value. Each rule below names the pattern, says why in one sentence, and shows
the corrected line. Semantics as in FORMATS.md §8 (bash 5.2 observed).

The script is followed as the shell runs it: ``set -e``/``set -o pipefail`` take effect
where they run, a function body is judged at each call with its caller's options (a
subshell inherits them and keeps its changes to itself), a ``source``d file where the
``source`` command stands. A place is flagged when some path reaching it loses the status;
a function that nothing calls is only noted.

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

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from forensics.shell.calls import (
    Options,
    command_option_changes,
    function_name,
    function_table,
    option_changes,
    sourced_name,
)
from forensics.shell.dialect import read_dialect
from forensics.shell.retry import decisions, loops, reruns
from forensics.shell.syntax import (
    AndOr,
    Compound,
    Pipeline,
    Simple,
    Token,
    assignment_name,
    base_name,
    command_name,
    command_words,
    inner_lists,
    outer_text,
    parse_script,
    unquote,
)

if TYPE_CHECKING:
    from forensics.core.focus import Focus

EXCERPT_CHARS = 200
_TEXT_CHARS = 60
# How far back a `$?` read looks for the command it meant: enough for any run of `echo`s,
# and it keeps the walk linear on long scripts.
_CHAIN_KEPT = 32
# Bounds that keep every script, however built, to a linear walk: call depth, sourced files
# (and their depth), and the and-or lists walked before loops stop taking a second pass.
_MAX_CALL_DEPTH = 32
_MAX_SOURCED = 32
_MAX_SOURCE_DEPTH = 4
_STEP_BUDGET = 20_000

# Commands whose own status nobody means to test: reading `$?` after them reads theirs.
_NOISE = frozenset(
    {"echo", "printf", "print", "log", "logger", "sleep", "date", "true", ":", "cd", "pushd",
     "popd", "mkdir", "rm", "touch", "sync", "trap", "set", "shopt", "shift", "export",
     "local", "declare", "typeset", "readonly", "unset", "tput", "clear", "say", "info",
     "warn", "note", "msg", "debug", "notice"}
)  # fmt: skip
_LOG_FUNCTION = re.compile(
    r"^(log|msg|info|warn|debug|note|notice|say|print|echo|notify|slack|alert)[_a-z0-9-]*$"
)
# Last commands of a pipeline that only carry output away: their status says nothing about
# the command that feeds them (`tail` succeeds whatever it is fed). Filters with logic of
# their own (grep, awk, sed, a `while read` loop) are left out: there the last status is
# often the one meant.
_LOG_SINKS = frozenset(
    {"tee", "tail", "logger", "ts", "rotatelogs", "multilog", "svlogd", "cronolog", "s6-log"}
)
_SINKS = _LOG_SINKS | {"cat"}
# Commands that set a status on purpose: `...; true; fi; log_end $?` means 0.
_DELIBERATE = frozenset({"true", "false", ":"})
_TESTS = frozenset({"[", "[[", "test"})
_HAS_PIPESTATUS = frozenset({"bash", "mksh", "unknown"})
_NO_PIPEFAIL = frozenset({"dash"})
_STATUS_READ = re.compile(r"\$(\?|\{\?\})")
_PIPESTATUS_READ = re.compile(r"\b(PIPESTATUS|pipestatus)\b")


class MaskingIssue(BaseModel):
    """One place where the script acts on an exit status it no longer has."""

    model_config = ConfigDict(frozen=True)

    pattern: str = Field(description="Stable id of the rule, e.g. negated_status_read.")
    title: str = Field(description="The pattern in a few words.")
    line: int = Field(ge=1, description="1-based line of the script where it bites.")
    file: str | None = Field(
        default=None, description="The sourced file it is in, as named; None: the script."
    )
    related_lines: list[int] = Field(default_factory=list, description="Lines that feed it.")
    excerpt: str = Field(description="The line as written (cut at 200 characters).")
    explanation: str
    corrected: str = Field(description="The corrected line(s).")
    masked_variable: str | None = Field(
        default=None, description="The variable that carries the masked status onward."
    )


class SourcedFile(BaseModel):
    """A file the script reads with ``source``/``.``, and whether it was followed."""

    name: str = Field(description="As resolved beside the script, or the word as written.")
    line: int
    read: bool
    problem: str | None = Field(default=None, description="Why it was not followed.")


class AnalysisNote(BaseModel):
    """Something the analysis did not judge, and why (a function nothing calls)."""

    line: int
    text: str


class MaskingAnalysis(BaseModel):
    dialect: str = Field(description="bash, sh, dash, busybox, zsh, ... or unknown.")
    dialect_note: str | None = Field(
        default=None, description="How the dialect was inferred when line 1 has no shebang."
    )
    errexit: bool = Field(description="set -e is in effect somewhere (option, shebang, `set`).")
    pipefail: bool = Field(description="pipefail is in effect somewhere.")
    issues: list[MaskingIssue] = Field(default_factory=list)
    sourced: list[SourcedFile] = Field(default_factory=list)
    notes: list[AnalysisNote] = Field(default_factory=list)


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
    read_source: Callable[[str], str | None] | None = None,
) -> MaskingAnalysis:
    """Analyse ``text``; never raises.

    ``interpreter`` and ``interpreter_options`` come from the process's command line when
    known (``bash -o pipefail x.sh``); ``supervised`` names the commands the script is
    known to run (a zombie child's name) and ``focus`` is the operator's regex: a
    ``|| true`` around one of them is the daemon's status thrown away. ``read_source``
    returns the text of a file the script sources (a name relative to the script's
    directory; absolute paths are only named), or None when it cannot be read.
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]
    program = parse_script(text)
    dialect, dialect_note = read_dialect(interpreter, lines)
    start = _start_options(lines[0] if lines else "", interpreter_options)
    library = _Library.read(program, read_source)
    functions = function_table([program, *(part.program for part in library.texts.values())])
    walker = _Walker(lines, start, dialect, _daemon_matcher(supervised, focus), functions, library)
    for name, sourced in library.texts.items():
        walker.function_files.update(
            (id(function), (name, sourced.lines))
            for function in function_table([sourced.program]).values()
        )
    walker.walk_list(program, [_Marker("start", None, 1)])
    notes = walker.note_uncalled(function_table([program]))
    walker.find_retry_loops(program)
    issues = sorted(
        walker.issues.values(),
        key=lambda issue: (issue.file is not None, issue.file or "", issue.line, issue.pattern),
    )
    return MaskingAnalysis(
        dialect=dialect,
        dialect_note=dialect_note,
        errexit=any(options.errexit for options in walker.seen),
        pipefail=any(options.pipefail for options in walker.seen),
        issues=issues,
        sourced=library.files,
        notes=notes,
    )


def _start_options(shebang: str, interpreter_options: Sequence[str]) -> Options:
    start = Options().changed(option_changes(list(interpreter_options)))
    if shebang.startswith("#!"):
        words = shebang[2:].split()
        start = start.changed(option_changes([w for w in words[1:] if w[:1] in "-+"]))
    return start


def _daemon_matcher(supervised: Sequence[str], focus: str | None) -> Callable[[str], bool] | None:
    """Whether a command's text names the daemon: a supervised name, or ``--focus`` matched
    as everywhere else (``forensics/core/focus.py``; a pattern it refuses is left out)."""
    names = [name for name in supervised if name]
    pattern = _focus_pattern(focus) if focus else None
    if not names and pattern is None:
        return None

    def names_daemon(text: str) -> bool:
        return any(name in text for name in names) or (pattern is not None and pattern.search(text))

    return names_daemon


def _focus_pattern(focus: str) -> Focus | None:
    # Imported here: without --focus, lint-script starts without loading re2.
    from forensics.core.focus import Focus, FocusError

    try:
        return Focus.compile(focus)
    except FocusError:
        return None


@dataclass
class _Text:
    program: list[AndOr]
    lines: list[str]


@dataclass
class _Library:
    """The sourced files, read once before the walk so their functions are known."""

    texts: dict[str, _Text]
    files: list[SourcedFile]

    @classmethod
    def read(
        cls, program: list[AndOr], read_source: Callable[[str], str | None] | None
    ) -> _Library:
        library = cls({}, [])
        pending = [(program, 0)]
        named: set[str] = set()
        while pending:
            items, depth = pending.pop(0)
            for command in _simple_commands(items):
                words = [token.text for token in command.words]
                if len(words) < 2 or unquote(words[0]) not in (".", "source"):
                    continue
                name = sourced_name(words[1])
                shown = name if name is not None else words[1]
                if shown in named:
                    continue
                named.add(shown)
                if name is None:
                    problem: str | None = "its path is only known when the script runs"
                elif read_source is None:
                    problem = "not read: only the script itself was available"
                elif name.startswith("/"):
                    problem = "not read: an absolute path, not beside the script"
                elif len(library.texts) >= _MAX_SOURCED or depth >= _MAX_SOURCE_DEPTH:
                    problem = (
                        f"not read: more than {_MAX_SOURCED} files or {_MAX_SOURCE_DEPTH} "
                        "levels deep"
                    )
                else:
                    text = _safe_read(read_source, name)
                    problem = None if text is not None else "could not be read beside the script"
                    if text is not None:
                        parsed = parse_script(text)
                        lines = [line.rstrip("\r") for line in text.split("\n")]
                        library.texts[name] = _Text(parsed, lines)
                        pending.append((parsed, depth + 1))
                library.files.append(
                    SourcedFile(
                        name=shown, line=command.line, read=problem is None, problem=problem
                    )
                )
        return library


def _safe_read(read_source: Callable[[str], str | None], name: str) -> str | None:
    try:
        return read_source(name)
    except (OSError, ValueError):
        return None


def _simple_commands(items: list[AndOr]) -> Iterator[Simple]:
    stack = [items]
    while stack:
        for item in stack.pop():
            for pipeline in item.pipelines:
                for command in pipeline.commands:
                    if isinstance(command, Simple):
                        yield command
                    else:
                        stack.extend(inner_lists(command))


@dataclass(frozen=True)
class _Marker:
    """What precedes the first command of a list: ``start`` (unknown), ``negated`` (the
    branch of ``if ! P``/``while ! P``), ``branch`` or ``else`` of a condition, with the
    unit run before the ``if`` (``before``) for a condition that tested ``$?``."""

    kind: str
    condition: AndOr | None
    line: int
    before: AndOr | None = None


_Unit = AndOr | _Marker
_States = frozenset[Options]


@dataclass(frozen=True)
class _View:
    """A simple command as the walk reads it."""

    names: list[str]
    option_changes: list[tuple[str, bool]]
    reads_status: bool
    reads_pipestatus: bool

    @classmethod
    def of(cls, command: Simple) -> _View:
        texts = [outer_text(token.text) for token in command.words]
        return cls(
            names=command_words(command),
            option_changes=command_option_changes(command),
            reads_status=any(_STATUS_READ.search(text) for text in texts),
            reads_pipestatus=any(_PIPESTATUS_READ.search(text) for text in texts),
        )


class _Walker:
    def __init__(
        self,
        lines: list[str],
        start: Options,
        dialect: str,
        daemon: Callable[[str], bool] | None,
        functions: dict[str, Compound],
        library: _Library,
    ) -> None:
        self.lines = lines
        self.file: str | None = None
        self.dialect = dialect
        self.daemon = daemon
        self.functions = functions
        self.library = library
        self.issues: dict[tuple[str | None, int, str], MaskingIssue] = {}
        self.sources: dict[tuple[str | None, int, str], Pipeline | None] = {}
        self.masked_variables: dict[str, MaskingIssue] = {}
        self.masked_reads: dict[int, MaskingIssue] = {}
        # The options that may be in force here: one per path that reached this point.
        self.states: _States = frozenset({start})
        self.seen: set[Options] = {start}
        # Inside a condition, `&&`/`||` operand or `!`: `set -e` does not act here.
        self.exempt = 0
        self.calls: list[tuple[str, int]] = []
        self.called: set[int] = set()
        self.walked: dict[tuple[int, Options, bool, bool], _States] = {}
        self.views: dict[int, _View] = {}
        # Functions defined in a sourced file: that file's name and lines, for the issues.
        self.function_files: dict[int, tuple[str, list[str]]] = {}
        self.sourcing: list[str] = []
        self.steps = 0
        # Calls deeper than _MAX_CALL_DEPTH were not followed: "never called" is then
        # decided by the text (no command names the function) instead of by the walk.
        self.capped = False

    # -- walking in execution order -------------------------------------------------

    def walk_list(self, items: list[AndOr], prefix: list[_Unit], condition: bool = False) -> None:
        """Visit ``items`` in order; ``condition`` lists (after if/while) are exempt from
        `set -e`, so the errexit rule does not apply to them."""
        chain = prefix[-_CHAIN_KEPT:]
        for index, item in enumerate(items):
            self.steps += 1
            following = items[index + 1] if index + 1 < len(items) else None
            self.visit_and_or(item, chain, None if condition else following, condition)
            chain.append(item)
            if len(chain) > 2 * _CHAIN_KEPT:
                del chain[:-_CHAIN_KEPT]

    def visit_and_or(
        self, item: AndOr, chain: list[_Unit], following: AndOr | None, condition: bool
    ) -> None:
        self.visit_pipeline(item.first, chain, exempt=bool(item.rest), consumed=bool(item.rest))
        reached = set(self.states)
        for index, (_, pipeline) in enumerate(item.rest):
            operand = AndOr(first=item.pipelines[index])
            last = index == len(item.rest) - 1
            marker = _Marker("operand", operand, operand.line)
            self.visit_pipeline(pipeline, [*chain, marker], exempt=not last, consumed=not last)
            reached |= self.states
        self.states = frozenset(reached)
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
            and not (following is not None and _reads_pipestatus(following.first))
        ):
            self.sink_without_pipefail(item.first, "`set -e` does not stop", errexit=True)

    def visit_pipeline(
        self, pipeline: Pipeline, chain: list[_Unit], exempt: bool = False, consumed: bool = False
    ) -> None:
        """Each command of a pipeline of several runs in a subshell: what it changes
        (``set``, ``cd``) stays there."""
        exempt = exempt or pipeline.negated
        self.exempt += exempt
        entry = self.states
        alone = len(pipeline.commands) == 1
        for command in pipeline.commands:
            if not alone:
                self.states = entry
            if isinstance(command, Simple):
                self.check_reads(command, command.words, chain)
                self.run_simple(command, consumed=(consumed or pipeline.negated) and alone)
            else:
                self.visit_compound(command, chain)
        if not alone:
            self.states = entry
        self.exempt -= exempt

    def view(self, command: Simple) -> _View:
        """What the rules ask of a command, worked out once however often it is walked."""
        view = self.views.get(id(command))
        if view is None:
            view = self.views[id(command)] = _View.of(command)
        return view

    def run_simple(self, command: Simple, consumed: bool) -> None:
        view = self.view(command)
        if view.option_changes:
            self.states = frozenset(options.changed(view.option_changes) for options in self.states)
            self.seen |= self.states
            return
        words = view.names
        if not words:
            return
        if words[0] in (".", "source") and len(words) > 1:
            self.source(command)
        elif words[0] in self.functions:
            self.call(self.functions[words[0]], command.line, consumed)
        elif "$" in words[0]:
            for function in _dynamic_targets(words[0], self.functions):
                self.call(function, command.line, consumed)
        elif words[0] == "trap" and len(words) > 1:
            handler = words[1].split()
            if handler and handler[0] in self.functions:
                self.call(self.functions[handler[0]], command.line, consumed=False)

    def call(self, function: Compound, line: int, consumed: bool) -> None:
        """Walk ``function``'s body with the options in force at the call: once per
        option setting it is called with (each evolves on its own), so the walk stays
        linear in the script's size however often the function is called."""
        self.called.add(id(function))
        if len(self.calls) >= _MAX_CALL_DEPTH:
            self.capped = True
            return
        if any(name == function_name(function) for name, _ in self.calls):
            return
        reached: set[Options] = set()
        for options in self.states:
            key = (id(function), options, consumed, self.exempt > 0)
            if key not in self.walked:
                self.states = frozenset({options})
                self.walked[key] = self.walk_function(function, line, consumed)
            reached |= self.walked[key]
        self.states = frozenset(reached)

    def walk_function(self, function: Compound, line: int, consumed: bool) -> _States:
        entry = self.states
        self.calls.append((function_name(function), line))
        saved = (self.lines, self.file)
        if id(function) in self.function_files:
            self.file, self.lines = self.function_files[id(function)]
        body = _function_body(function)
        self.walk_list(body, [_Marker("start", None, function.line)])
        last = body[-1] if body else None
        if consumed and last is not None and not last.rest and _is_sink_pipeline(last.first):
            self.sink_without_pipefail(
                last.first, f"the caller of `{function_name(function)}` on line {line} sees success"
            )
        self.lines, self.file = saved
        self.calls.pop()
        return entry if _runs_in_subshell(function) else self.states

    def source(self, command: Simple) -> None:
        name = sourced_name(command_words(command)[1])
        text = self.library.texts.get(name) if name is not None else None
        if name is None or text is None or name in self.sourcing:
            return
        if len(self.sourcing) >= _MAX_SOURCE_DEPTH:
            return
        saved = (self.lines, self.file)
        self.sourcing.append(name)
        self.lines, self.file = text.lines, name
        self.walk_list(text.program, [_Marker("start", None, 1)])
        self.lines, self.file = saved
        self.sourcing.pop()

    def visit_compound(self, command: Compound, chain: list[_Unit]) -> None:
        before = next((unit for unit in reversed(chain) if isinstance(unit, AndOr)), None)
        if command.kind == "if":
            self.visit_if(command, chain, before)
        elif command.kind in ("while", "until", "for"):
            self.visit_loop(command, chain)
        elif command.kind == "case":
            self.check_reads(None, command.words, chain)
            entry = self.states
            reached = set(entry)
            for body in command.bodies:
                self.states = entry
                self.walk_list(body, list(chain))
                reached |= self.states
            self.states = frozenset(reached)
        elif command.kind == "function":
            return
        elif command.kind == "subshell":
            entry = self.states
            for body in command.bodies:
                self.walk_list(body, list(chain))
            self.states = entry
        else:
            for body in command.bodies:
                self.walk_list(body, list(chain))

    def visit_if(self, command: Compound, chain: list[_Unit], before: AndOr | None) -> None:
        reached: set[Options] = set()
        previous: AndOr | None = None
        for index, (condition, body) in enumerate(command.clauses):
            entry: list[_Unit] = list(chain) if index == 0 else [_Marker("else", previous, 1)]
            self.exempt += 1
            self.walk_list(condition, entry, condition=True)
            self.exempt -= 1
            last = condition[-1] if condition else None
            self.check_condition(last, "if")
            kind = "negated" if last is not None and _negated(last) else "branch"
            line = last.line if last else command.line
            after_condition = self.states
            self.walk_list(body, [_Marker(kind, last, line, before)])
            reached |= self.states
            self.states = after_condition
            previous = last
        for body in command.bodies:
            self.walk_list(body, [_Marker("else", previous, command.line, before)])
        reached |= self.states
        self.states = frozenset(reached)

    def visit_loop(self, command: Compound, chain: list[_Unit]) -> None:
        """The body may run again with what it changed, or not at all: a second pass when
        it changed the options (never past the step budget)."""
        entry = self.states
        for _ in range(2):
            if command.kind == "for":
                self.check_reads(None, command.words, chain)
                for body in command.bodies:
                    self.walk_list(body, [_Marker("start", None, command.line)])
            for condition, body in command.clauses:
                self.exempt += 1
                self.walk_list(condition, [_Marker("start", None, command.line)], condition=True)
                self.exempt -= 1
                last = condition[-1] if condition else None
                self.check_condition(last, command.kind)
                negated = command.kind == "while" and last is not None and _negated(last)
                marker = _Marker("negated" if negated else "branch", last, command.line)
                self.walk_list(body, [marker])
            reached = entry | self.states
            if reached == entry or self.steps > _STEP_BUDGET:
                self.states = reached
                return
            entry = self.states = reached

    def note_uncalled(self, functions: dict[str, Compound]) -> list[AnalysisNote]:
        named = _named_commands(functions.values()) if self.capped else set()
        return [
            AnalysisNote(
                line=function.line,
                text=f"function `{name}` (line {function.line}) is never called (a call in a "
                "comment is no call), so its lines were not judged",
            )
            for name, function in functions.items()
            if id(function) not in self.called and name not in named
        ]

    # -- the rules --------------------------------------------------------------------

    def check_reads(
        self, command: Simple | None, words: Sequence[Token], chain: list[_Unit]
    ) -> None:
        if command is not None:
            view = self.view(command)
            reads_status, reads_pipestatus = view.reads_status, view.reads_pipestatus
        else:
            texts = [outer_text(word.text) for word in words]
            reads_status = any(_STATUS_READ.search(text) for text in texts)
            reads_pipestatus = False
        if not reads_status and not reads_pipestatus:
            return
        line = command.line if command is not None else (words[0].line if words else 1)
        if reads_status:
            issue = self.status_issue(chain, line)
            if issue is not None:
                self.remember(issue, command, line)
        if command is not None and reads_pipestatus:
            issue = self.pipestatus_issue(chain, line)
            if issue is not None:
                self.remember(issue, command, line)

    def remember(self, issue: MaskingIssue, command: Simple | None, line: int) -> None:
        """Keep what a masked read fills: the variable it assigns, the line it is on."""
        issue = self.add(issue)
        variable = _assigned_variable(command, issue.pattern) if command is not None else None
        if variable is not None and self.file is None:
            if issue.masked_variable is None:
                issue = issue.model_copy(update={"masked_variable": variable})
                self.issues[self.key(issue)] = issue
            self.masked_variables[variable] = issue
        if self.file is None:
            self.masked_reads[line] = issue

    def key(self, issue: MaskingIssue) -> tuple[str | None, int, str]:
        return (issue.file, issue.line, issue.pattern)

    def add(self, issue: MaskingIssue) -> MaskingIssue:
        """Record ``issue``; one lost status is one issue, so a second sighting of the same
        place only adds the lines it was seen from."""
        known = self.issues.get(self.key(issue))
        if known is None:
            self.issues[self.key(issue)] = issue
            return issue
        related = sorted({*known.related_lines, *issue.related_lines} - {known.line})
        if related != known.related_lines:
            known = known.model_copy(update={"related_lines": related})
            self.issues[self.key(known)] = known
        return known

    def status_issue(self, chain: list[_Unit], line: int) -> MaskingIssue | None:
        unit = chain[-1]
        if isinstance(unit, _Marker) and unit.kind == "operand" and unit.condition is not None:
            return self.sink_read(unit.condition, line)  # `a || echo $?`: a's status, as meant
        if isinstance(unit, _Marker):
            if unit.kind == "negated":
                return self.negated_read(unit, None, line)
            return self.read_after_test(unit, line)
        if _swallowed(unit):
            thrown_away = self.issues.get((self.file, unit.line, "status_discarded"))
            if thrown_away is not None:  # `daemon || true; echo $?`: one status, one issue
                return self.add(thrown_away.model_copy(update={"related_lines": [line]}))
            left = _text(unit.pipelines[:-1])
            return self.issue(
                "status_discarded",
                line,
                [unit.line],
                f"`{left} || {_swallow_word(unit)}` on line {unit.line} always succeeds, so "
                "`$?` here is 0 whatever the command's exit status was.",
                f"rc=0; {_text(unit.pipelines[:-1], limit=None)} || rc=$?",
                source=unit.pipelines[-2],
            )
        if _is_noise(unit):
            real = next((u for u in reversed(chain) if not _is_noise(u)), None)
            if isinstance(real, _Marker) and real.kind == "negated":
                return self.negated_read(real, unit, line)
            if isinstance(real, AndOr):
                return self.read_late(unit, real, line)
            if isinstance(real, _Marker) and real.kind in ("branch", "else"):
                return self.read_late_in_branch(unit, real, line)
            return None
        compound = _single_compound(unit)
        if compound is not None and compound.kind in ("if", "case"):
            return self.read_after_if(compound, line)
        if compound is not None and compound.kind in ("while", "until", "for"):
            return self.read_after_loop(compound, line)
        return self.sink_read(unit, line)

    def sink_read(self, unit: AndOr, line: int) -> MaskingIssue | None:
        """`$?` right after ``unit``: masked only when it is `cmd | tee` without pipefail."""
        if _is_sink_pipeline(unit.first) and not unit.rest:
            return self.sink_without_pipefail(unit.first, f"`$?` on line {line} is 0", read=line)
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
        return self.issue(
            "negated_status_read",
            line,
            [marker.line],
            explanation + ".",
            corrected,
            source=pipeline,
        )

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
            source=real.first,
        )

    def read_late_in_branch(self, unit: AndOr, marker: _Marker, line: int) -> MaskingIssue:
        """`make; if [ $? -ne 0 ]; then echo failed; exit $?; fi`: the `exit` reads echo's 0."""
        return self._read_after_meant(
            marker,
            line,
            unit.line,
            lambda shown: (
                f"`$?` here is the status of `{_text(unit.pipelines)}` (line "
                f"{unit.line}), not of {shown}: every command run in the branch, `echo` included, "
                "replaces `$?`."
            ),
        )

    def read_after_test(self, marker: _Marker, line: int) -> MaskingIssue | None:
        """`if [ $? -ne 0 ]; then echo "failed: $?"`: `$?` is the test's own status."""
        condition = marker.condition
        if marker.kind not in ("branch", "else") or condition is None or not _is_test(condition):
            return None
        value = "0" if marker.kind == "branch" else "1"
        return self._read_after_meant(
            marker,
            line,
            condition.line,
            lambda shown: (
                f"`$?` here is the status of the test `{_text(condition.pipelines)}` "
                f"(line {condition.line}), {value} in this branch, not of {shown}."
            ),
        )

    def _read_after_meant(
        self, marker: _Marker, line: int, overwriter: int, why: Callable[[str], str]
    ) -> MaskingIssue:
        """A `$?` on LINE meant for the command before MARKER (``_meant``), which the
        command on line OVERWRITER replaced; WHY words it given how that command is shown."""
        meant = _meant(marker)
        shown = f"`{_text(meant.pipelines)}` (line {meant.line})" if meant else "the command"
        fix_line = meant.line if meant else marker.line
        rest = _replace_status(self.line_text(line), "rc")
        return self.issue(
            "status_read_late",
            line,
            [fix_line, overwriter],
            why(shown),
            f'rc=$?   # directly after line {fix_line}, then test "$rc"'
            + (f"\n{rest}" if rest else ""),
            source=meant.first if meant else None,
        )

    def read_after_if(self, compound: Compound, line: int) -> MaskingIssue | None:
        endings = [body[-1] for _, body in compound.clauses if body]
        endings += [body[-1] for body in compound.bodies if body]
        noisy = [item for item in endings if _is_noise(item, deliberate=False)]
        if not noisy:
            return None
        closer, none = ("fi", "no branch ran") if compound.kind == "if" else ("esac", "no arm")
        condition = compound.clauses[0][0] if compound.clauses else []
        shown = _text(condition[-1].pipelines) if condition else "the command before it"
        return self.issue(
            "status_read_late",
            line,
            [compound.line, noisy[0].line],
            f"After `{closer}`, `$?` is the status of the last command run inside the "
            f"`{compound.kind}` of line {compound.line} (such as `{_text(noisy[0].pipelines)}`, "
            f"line {noisy[0].line}), or 0 when {none} ran, not the status of `{shown}`.",
            f'rc=0; {shown.removeprefix("! ")} || rc=$?   # then test "$rc"'
            if condition
            else f"rc=$?   # directly after the command the `{compound.kind}` tests",
            source=condition[-1].first if condition else None,
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
        if any(options.errexit for options in self.states):
            capture = f"set +e; {capture}; set -e"
        return self.issue(
            "pipestatus_read_late",
            line,
            [pipeline.line],
            f"`PIPESTATUS` describes the most recent pipeline, here {now}, not "
            f"`{shown}` (line {pipeline.line}).",
            capture,
            source=pipeline,
        )

    def check_condition(self, last: AndOr | None, keyword: str) -> None:
        if last is not None and not last.rest and _is_sink_pipeline(last.first):
            if last.first.negated:
                consumer = f"this `{keyword} !` never takes its failure branch:"
            else:
                consumer = f"this `{keyword}` sees success"
            self.sink_without_pipefail(last.first, consumer)

    def sink_without_pipefail(
        self, pipeline: Pipeline, consumer: str, errexit: bool = False, read: int | None = None
    ) -> MaskingIssue | None:
        """``consumer`` completes "so ... even when X fails": who acts on tee's status.
        Flagged when some path reaching here has pipefail off (and, for the ``set -e``
        rule, errexit on); ``read`` is the line of a `$?` read that sees tee's status."""
        lossy = [
            options
            for options in self.states
            if not options.pipefail and (not errexit or (options.errexit and not self.exempt))
        ]
        if not lossy:
            return None
        sink = base_name(pipeline.commands[-1])
        shown = _text([pipeline], negation=False)
        if self.dialect in _NO_PIPEFAIL:
            corrected = "#!/bin/bash, then set -o pipefail   # dash has no pipefail"
        else:
            corrected = f"set -o pipefail   # before line {pipeline.line}" + self.pipefail_note()
        if self.dialect in _HAS_PIPESTATUS and "$?" in consumer:
            corrected += f"\nrc=${{PIPESTATUS[0]}}   # or this, directly after line {pipeline.line}"
        return self.add(
            self.issue(
                "pipeline_without_pipefail",
                pipeline.line,
                [read] if read is not None else [],
                f"Without `set -o pipefail` the status of `{shown}` is that of `{sink}`, so "
                f"{consumer} even when `{_first_name(pipeline)}` fails (exit 42 reads as 0)"
                f"{self.path_note()}.",
                corrected,
                source=pipeline,
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
        errexit = any(options.errexit for options in self.states)
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
                source=left[-1],
            )
        )

    # -- retry loops -------------------------------------------------------------------

    def find_retry_loops(self, items: list[AndOr]) -> None:
        """A loop retries when, on a failure, it runs the same command again: the masked
        command sits in its body (a ``for`` loop's variable not in it, so not a loop over
        batch sizes) and the decision leaves the loop on success or goes round on failure."""
        if not self.masked_variables and not self.masked_reads:
            return
        for loop in loops(items):
            for condition, _ in loop.clauses:
                for item in condition:
                    self.check_decision(item, loop)
            for body in [body for _, body in loop.clauses] + loop.bodies:
                for item, retries in decisions(body):
                    if retries:
                        self.check_decision(item, loop)

    def check_decision(self, item: AndOr, loop: Compound) -> None:
        for command in _commands(item):
            source = self.masked_source(command)
            if source is None:
                continue
            pipeline = self.sources.get(self.key(source))
            if pipeline is None or not reruns(loop, pipeline):
                return
            variable = source.masked_variable
            what = f"`${variable}`" if variable and source.line != command.line else "`$?`"
            self.add(
                self.issue(
                    "retry_on_masked_status",
                    command.line,
                    [source.line, loop.line],
                    f"The loop of line {loop.line} decides whether to run `{_first_name(pipeline)}`"
                    f" again on {what}, which line {source.line} filled from a masked status "
                    f"({source.title}), so a crash looks like success and the loop never retries.",
                    source.corrected,
                    source=pipeline,
                )
            )
            return

    def masked_source(self, command: Simple) -> MaskingIssue | None:
        texts = [outer_text(token.text) for token in command.words]
        if command.line in self.masked_reads and any(_STATUS_READ.search(t) for t in texts):
            return self.masked_reads[command.line]
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
        self,
        pattern: str,
        line: int,
        related: list[int],
        explanation: str,
        corrected: str,
        source: Pipeline | None = None,
    ) -> MaskingIssue:
        """An issue at ``line`` of the file being walked; ``source`` is the pipeline whose
        status was lost, kept for the retry rule."""
        issue = MaskingIssue(
            pattern=pattern,
            title=_TITLES[pattern],
            line=max(line, 1),
            file=self.file,
            related_lines=sorted({r for r in related if r >= 1 and r != line}),
            excerpt=self.line_text(line).strip()[:EXCERPT_CHARS],
            explanation=explanation,
            corrected=corrected,
        )
        self.sources.setdefault(self.key(issue), source)
        return issue

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else ""

    def pipefail_note(self) -> str:
        if self.dialect in ("sh", "unknown"):
            return "   # needs pipefail: bash, busybox sh, zsh, ksh (dash 0.5.12 has none)"
        return ""

    def path_note(self) -> str:
        """Which call the lines were reached through, when inside a function."""
        if not self.calls:
            return ""
        name, line = self.calls[-1]
        return f" (on the path through the call of `{name}` on line {line})"


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
            isinstance(last, Simple) and (base_name(last) or "") in _SINKS
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
    if isinstance(last, Compound) or (base_name(last) or "") not in sinks:
        return False
    feeders = pipeline.commands[:-1]
    return not all(isinstance(c, Simple) and (base_name(c) or "") in _NOISE for c in feeders)


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


def _commands(item: AndOr) -> Iterator[Simple]:
    for pipeline in item.pipelines:
        for command in pipeline.commands:
            if isinstance(command, Simple):
                yield command


def _is_test(condition: AndOr) -> bool:
    """``[ ... ]``, ``test ...``, ``[[ ... ]]`` or ``(( ... ))`` alone."""
    if condition.rest or len(condition.first.commands) != 1:
        return False
    command = condition.first.commands[0]
    if not isinstance(command, Simple) or not command.words:
        return False
    return (base_name(command) or "") in _TESTS or command.words[0].text.startswith("((")


def _meant(marker: _Marker) -> AndOr | None:
    """The command whose status a branch is about: the condition, or the command run
    before the ``if`` when the condition only tested ``$?``."""
    condition = marker.condition
    if condition is None:
        return marker.before
    reads_status = any(
        _STATUS_READ.search(outer_text(token.text))
        for command in _commands(condition)
        for token in command.words
    )
    return marker.before if reads_status else condition


def _function_body(function: Compound) -> list[AndOr]:
    """The list a function runs: the inside of its ``{ }`` or ``( )``."""
    if not function.bodies or not function.bodies[0]:
        return []
    (item,) = function.bodies[0][:1]
    body = item.first.commands[0] if item.first.commands else None
    if isinstance(body, Compound) and body.kind in ("group", "subshell") and body.bodies:
        return body.bodies[0]
    return function.bodies[0]


def _runs_in_subshell(function: Compound) -> bool:
    """``f() ( set +e; ... )``: what the body changes stays in its subshell."""
    if not function.bodies or not function.bodies[0]:
        return False
    commands = function.bodies[0][0].first.commands
    return bool(commands) and isinstance(commands[0], Compound) and commands[0].kind == "subshell"


def _dynamic_targets(word: str, functions: dict[str, Compound]) -> list[Compound]:
    """The functions a computed command name (``"stage_$stage"``, ``$1``) may run: every
    one whose name fits the literal parts around the expansions."""
    parts = re.split(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*]", word)
    if not any(parts):
        return list(functions.values())
    pattern = re.compile(".*".join(re.escape(part) for part in parts))
    return [function for name, function in functions.items() if pattern.fullmatch(name)]


def _named_commands(functions: Iterable[Compound]) -> set[str]:
    """Every command name written in the bodies of ``functions``."""
    names: set[str] = set()
    for function in functions:
        for command in _simple_commands(function.bodies[0] if function.bodies else []):
            words = command_words(command)
            if words:
                names.add(words[0])
    return names
