"""A tolerant reader of shell scripts: just enough structure to follow exit statuses.

It knows quoting, command substitutions, here-documents, line continuations, pipelines,
``!``, ``&&``/``||`` lists and the compound commands (``if``, ``while``/``until``, ``for``,
``case``, ``{ }``, ``( )``, functions), and keeps the 1-based line of every command. It is
not a validator: text it cannot make sense of is skipped, never an error, and nesting
deeper than ``MAX_DEPTH`` is read flat, so no input can exhaust the stack.

>>> program = parse_script("set -euo pipefail\\nif ! ./daemon | tee log; then\\n  echo $?\\nfi\\n")
>>> [item.first.commands[0].line for item in program]
[1, 2]
>>> condition = program[1].first.commands[0].clauses[0][0][0].first
>>> condition.negated, [command_name(c) for c in condition.commands]
(True, ['./daemon', 'tee'])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

MAX_DEPTH = 64

_OPERATORS = (
    ";;&", "&>>", "<<-", "<<<", ";;", ";&", "&&", "||", "|&", "&>", ">>", "<<", ">&", "<&",
    "<>", ">|", "|", "&", ";", "<", ">", "(", ")",
)  # fmt: skip
_REDIRECTIONS = frozenset({"&>>", "<<-", "<<<", "&>", ">>", "<<", ">&", "<&", "<>", ">|", "<", ">"})
_WORD_END = frozenset(" \t\r\n|&;<>()")
_ARRAY_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_COMMAND_END_OPS = frozenset({";", "&", "&&", "||", "|", "|&", ";;", ";&", ";;&", ")", "("})
# Words that carry another command after their own options: `timeout 60 ./daemon | tee`.
_WRAPPERS = frozenset(
    {"stdbuf", "nice", "nohup", "env", "exec", "command", "builtin", "time", "ionice",
     "taskset", "sudo", "chrt", "setsid", "timeout", "unbuffer"}
)  # fmt: skip


@dataclass(frozen=True)
class Token:
    kind: Literal["word", "op", "newline"]
    text: str
    line: int


@dataclass
class Simple:
    """A simple command: its words as written (quotes kept) and where it starts and ends."""

    words: list[Token]
    line: int
    end_line: int
    redirects: list[str] = field(default_factory=list)


@dataclass
class Compound:
    """``if``/``while``/``until``/``for``/``case``/``group``/``subshell``/``function``.

    ``clauses`` holds (condition, body) pairs: one per ``if``/``elif``, one for a loop.
    ``bodies`` holds the other lists: the ``else`` branch, ``for`` and ``case`` bodies,
    a group's or a function's content.
    """

    kind: str
    line: int
    end_line: int
    clauses: list[tuple[list[AndOr], list[AndOr]]] = field(default_factory=list)
    bodies: list[list[AndOr]] = field(default_factory=list)
    has_else: bool = False
    words: list[Token] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)


Command = Simple | Compound


@dataclass
class Pipeline:
    commands: list[Command]
    negated: bool
    line: int


@dataclass
class AndOr:
    """``first && second || third``: the operators in ``rest``; ``&`` in ``background``."""

    first: Pipeline
    rest: list[tuple[str, Pipeline]] = field(default_factory=list)
    background: bool = False

    @property
    def line(self) -> int:
        return self.first.line

    @property
    def pipelines(self) -> list[Pipeline]:
        return [self.first, *(pipeline for _, pipeline in self.rest)]


def parse_script(text: str) -> list[AndOr]:
    """The top-level command list of ``text``; never raises."""
    return _Parser(tokenize(text)).program()


def tokenize(text: str) -> list[Token]:
    """Split shell text into words, operators and newlines, skipping comments,
    here-document bodies and line continuations.

    >>> [t.text for t in tokenize("a 'b c' \\"$(d e)\\" # note\\ncat <<EOF | f\\nbody\\nEOF\\n")]
    ['a', "'b c'", '"$(d e)"', '\\n', 'cat', '<<', 'EOF', '|', 'f', '\\n']
    """
    tokens: list[Token] = []
    heredocs: list[tuple[str, bool]] = []
    position, line, length = 0, 1, len(text)
    while position < length:
        char = text[position]
        if char == "\n":
            tokens.append(Token("newline", "\n", line))
            position, line = position + 1, line + 1
            if heredocs:
                position, line = _skip_heredocs(text, position, line, heredocs)
                heredocs = []
        elif char in " \t\r":
            position += 1
        elif char == "\\" and text.startswith("\n", position + 1):
            position, line = position + 2, line + 1
        elif char == "#":
            end = text.find("\n", position)
            position = length if end < 0 else end
        elif text.startswith("((", position):
            end = _skip_nested(text, position + 2, ["(", "("])
            tokens.append(Token("word", text[position:end], line))
            line += text.count("\n", position, end)
            position = end
        elif char in "|&;<>()":
            operator = next(op for op in _OPERATORS if text.startswith(op, position))
            tokens.append(Token("op", operator, line))
            position += len(operator)
            if operator in ("<<", "<<-"):
                position, line = _read_heredoc_word(
                    text, position, line, operator, tokens, heredocs
                )
        else:
            end = _word_end(text, position)
            word = text[position:end]
            if word.isdigit() and end < length and text[end] in "<>":
                # `2>&1`: the descriptor belongs to the redirection, shown with it
                operator = next(op for op in _OPERATORS if text.startswith(op, end))
                tokens.append(Token("op", word + operator, line))
                position = end + len(operator)
                if operator in ("<<", "<<-"):
                    position, line = _read_heredoc_word(
                        text, position, line, operator, tokens, heredocs
                    )
                continue
            tokens.append(Token("word", word, line))
            line += word.count("\n")
            position = end
    return tokens


def is_redirection(token: Token) -> bool:
    """``>``, ``2>&``, ``<<-`` and the like (a descriptor number may lead)."""
    return token.kind == "op" and token.text.lstrip("0123456789") in _REDIRECTIONS


def _read_heredoc_word(
    text: str,
    position: int,
    line: int,
    operator: str,
    tokens: list[Token],
    heredocs: list[tuple[str, bool]],
) -> tuple[int, int]:
    while position < len(text) and text[position] in " \t":
        position += 1
    end = _word_end(text, position)
    if end > position:
        word = text[position:end]
        tokens.append(Token("word", word, line))
        delimiter = word.replace("'", "").replace('"', "").replace("\\", "")
        heredocs.append((delimiter, operator == "<<-"))
    return end, line + text.count("\n", position, end)


def _skip_heredocs(
    text: str, position: int, line: int, heredocs: list[tuple[str, bool]]
) -> tuple[int, int]:
    for delimiter, strip_tabs in heredocs:
        while position < len(text):
            end = text.find("\n", position)
            end = len(text) if end < 0 else end
            body_line = text[position:end].rstrip("\r")
            position, line = end + 1, line + 1
            if (body_line.lstrip("\t") if strip_tabs else body_line) == delimiter:
                break
    return min(position, len(text)), line


def _word_end(text: str, position: int) -> int:
    """Index just past the word starting at ``position``, quotes and substitutions included
    (and the parenthesised list of an array assignment, ``a=(x y)``)."""
    length = len(text)
    start = position
    while position < length:
        char = text[position]
        if char == "(" and _ARRAY_ASSIGNMENT.fullmatch(text, start, position):
            position = _skip_nested(text, position + 1, ["("])
            continue
        if char in _WORD_END:
            return position
        if char == "\\":
            position += 2
        elif char == "'":
            end = text.find("'", position + 1)
            position = length if end < 0 else end + 1
        elif char == '"':
            position = _skip_nested(text, position + 1, ['"'])
        elif char == "`":
            position = _skip_nested(text, position + 1, ["`"])
        elif text.startswith("$(", position):
            position = _skip_nested(text, position + 2, ["("])
        elif text.startswith("${", position):
            position = _skip_nested(text, position + 2, ["{"])
        elif text.startswith("$'", position):
            position = _skip_ansi_c_string(text, position + 2)
        else:
            position += 1
    return min(position, length)


def _skip_ansi_c_string(text: str, position: int) -> int:
    while position < len(text):
        if text[position] == "\\":
            position += 2
        elif text[position] == "'":
            return position + 1
        else:
            position += 1
    return len(text)


def _skip_nested(text: str, position: int, stack: list[str]) -> int:
    """Skip to just past the closer of the innermost context in ``stack``.

    Contexts: ``"`` double quotes, `````` backticks, ``(`` command substitution or
    arithmetic, ``{`` parameter expansion. Iterative, so nesting depth costs no stack.
    """
    length = len(text)
    closers = {'"': '"', "`": "`", "(": ")", "{": "}"}
    while position < length and stack:
        char = text[position]
        top = stack[-1]
        if char == "\\":
            position += 2
            continue
        if char == closers[top]:
            stack.pop()
            position += 1
            continue
        if top in "({" and char == "'":
            end = text.find("'", position + 1)
            position = length if end < 0 else end + 1
            continue
        if top != "`" and text.startswith("$(", position):
            stack.append("(")
            position += 2
        elif top != "`" and text.startswith("${", position):
            stack.append("{")
            position += 2
        elif top != '"' and char == '"':
            stack.append('"')
            position += 1
        elif top != "`" and char == "`":
            stack.append("`")
            position += 1
        elif top == "(" and char == "(":
            stack.append("(")
            position += 1
        else:
            position += 1
    return min(position, length)


def unquote(word: str) -> str:
    """The word with its quotes and backslashes removed (substitutions left as written).

    >>> unquote("\\"/usr/bin/tee\\""), unquote("'a b'c"), unquote("x\\\\ y")
    ('/usr/bin/tee', 'a bc', 'x y')
    """
    out: list[str] = []
    position, length = 0, len(word)
    quote = ""
    while position < length:
        char = word[position]
        if char == "\\" and quote != "'" and position + 1 < length:
            out.append(word[position + 1])
            position += 2
            continue
        if char in "'\"" and (not quote or quote == char):
            quote = "" if quote else char
        else:
            out.append(char)
        position += 1
    return "".join(out)


def outer_text(word: str) -> str:
    """What the current shell itself expands in ``word``: single-quoted text, escaped
    characters and command substitutions (which run in a subshell) blanked out.

    >>> outer_text("'$?' \\\\$? $(echo $?) $(( $? + 1 )) rc=$?")
    ' _?  $(( $? + 1 )) rc=$?'
    """
    out: list[str] = []
    position, length = 0, len(word)
    in_double = False
    while position < length:
        char = word[position]
        if char == "\\":
            out.append("_")
            position += 2
        elif char == "'" and not in_double:
            end = word.find("'", position + 1)
            position = length if end < 0 else end + 1
        elif char == '"':
            in_double = not in_double
            position += 1
        elif word.startswith("$((", position):
            out.append("$((")
            position += 3
        elif word.startswith("$(", position):
            position = _skip_nested(word, position + 2, ["("])
        elif char == "`":
            position = _skip_nested(word, position + 1, ["`"])
        else:
            out.append(char)
            position += 1
    return "".join(out)


def assignment_name(word: str) -> str | None:
    """``NAME`` for a word ``NAME=value`` (or ``NAME+=value``, ``NAME[i]=value``), else None.

    >>> assignment_name("rc=$?"), assignment_name("--x=1"), assignment_name("a[0]+=1")
    ('rc', None, 'a')
    """
    equals = word.find("=")
    if equals <= 0:
        return None
    name = word[:equals].rstrip("+")
    bracket = name.find("[")
    if bracket > 0:
        name = name[:bracket]
    if (
        name
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isalnum() or c == "_" for c in name)
    ):
        return name
    return None


def command_words(command: Simple) -> list[str]:
    """The words after leading assignments and wrapper commands (``timeout 60``, ``nohup``).

    >>> command_words(Simple([Token("word", w, 1) for w in ["A=1", "nohup", "./d", "-x"]], 1, 1))
    ['./d', '-x']
    """
    words = [unquote(token.text) for token in command.words]
    index = 0
    while index < len(words) and assignment_name(words[index]) is not None:
        index += 1
    while index < len(words) and words[index].rsplit("/", 1)[-1] in _WRAPPERS:
        wrapper = words[index].rsplit("/", 1)[-1]
        index += 1
        while index < len(words) and (
            words[index].startswith("-") or assignment_name(words[index]) is not None
        ):
            index += 1
        if wrapper == "timeout" and index < len(words):
            index += 1
    return words[index:]


def command_name(command: Command) -> str | None:
    """The command a simple command runs, as written; ``while`` etc. for compounds."""
    if isinstance(command, Compound):
        return command.kind
    words = command_words(command)
    return words[0] if words else None


def base_name(command: Command) -> str | None:
    """The command's name without its directory: ``tee`` for ``/usr/bin/tee -a log``."""
    name = command_name(command)
    return name.rsplit("/", 1)[-1] if name else None


def inner_lists(command: Compound) -> list[list[AndOr]]:
    """Every command list inside ``command``: conditions, bodies, branches, arms."""
    return [part for clause in command.clauses for part in clause] + command.bodies


class _Parser:
    """Recursive descent over tokens; every method consumes at least one token or none
    and says so, so the loops always end."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.position = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def at_word(self, *words: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "word" and token.text in words

    def at_op(self, *ops: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "op" and token.text in ops

    def last_line(self) -> int:
        if not self.tokens:
            return 1
        return self.tokens[min(self.position, len(self.tokens)) - 1].line

    def skip_newlines(self) -> None:
        while (token := self.peek()) is not None and token.kind == "newline":
            self.position += 1

    def program(self) -> list[AndOr]:
        items: list[AndOr] = []
        while self.peek() is not None:
            before = self.position
            items.extend(self.command_list(stop_words=(), stop_ops=()))
            if self.position == before:
                self.position += 1
        return items

    def command_list(self, stop_words: tuple[str, ...], stop_ops: tuple[str, ...]) -> list[AndOr]:
        items: list[AndOr] = []
        while (token := self.peek()) is not None:
            if token.kind == "newline" or (token.kind == "op" and token.text in (";", "&")):
                self.position += 1
                continue
            if token.kind == "word" and token.text in stop_words:
                break
            if token.kind == "op" and (token.text in stop_ops or token.text in (";;", ";&", ";;&")):
                break
            if token.kind == "op" and token.text != "(" and not is_redirection(token):
                self.position += 1  # a stray operator: `| x` or an unmatched `)`
                continue
            before = self.position
            item = self.and_or()
            if self.position == before:
                break
            if item is not None:
                items.append(item)
        return items

    def and_or(self) -> AndOr | None:
        first = self.pipeline()
        if first is None:
            return None
        item = AndOr(first=first)
        while self.at_op("&&", "||"):
            operator = self.take().text
            self.skip_newlines()
            following = self.pipeline()
            if following is None:
                break
            item.rest.append((operator, following))
        if self.at_op("&"):
            item.background = True
        return item

    def pipeline(self) -> Pipeline | None:
        negated = False
        token = self.peek()
        if token is None:
            return None
        line = token.line
        while self.at_word("!", "time"):
            if self.take().text == "!":
                negated = not negated
        first = self.command()
        if first is None:
            return Pipeline(commands=[], negated=negated, line=line) if negated else None
        commands = [first]
        while self.at_op("|", "|&"):
            self.take()
            self.skip_newlines()
            following = self.command()
            if following is None:
                break
            commands.append(following)
        return Pipeline(commands=commands, negated=negated, line=line)

    def command(self) -> Command | None:
        token = self.peek()
        if token is None or token.kind == "newline":
            return None
        if token.kind == "op" and token.text == "(":
            return self.redirected(self.nested(self.subshell))
        if token.kind == "op" and not is_redirection(token):
            return None
        if token.kind == "word":
            compound = {
                "if": self.if_clause,
                "while": self.loop,
                "until": self.loop,
                "for": self.for_loop,
                "select": self.for_loop,
                "case": self.case,
                "{": self.group,
                "function": self.function,
            }.get(token.text)
            if compound is not None:
                return self.redirected(self.nested(compound))
            following = self.tokens[self.position + 1 : self.position + 3]
            if [t.text for t in following] == ["(", ")"] and all(t.kind == "op" for t in following):
                return self.nested(self.function)
        return self.simple()

    def redirected(self, command: Command | None) -> Command | None:
        """A compound's own redirections (``{ ...; } 2>&1 | tee``) stay with it, so the
        pipeline after them is still read as one pipeline."""
        if not isinstance(command, Compound):
            return command
        while (token := self.peek()) is not None and is_redirection(token):
            self.take()
            redirection = token.text
            if (target := self.peek()) is not None and target.kind == "word":
                redirection += self.take().text
            command.redirects.append(redirection)
        return command

    def nested(self, reader: Callable[[], Command]) -> Command | None:
        if self.depth >= MAX_DEPTH:
            return self.simple()
        self.depth += 1
        try:
            return reader()
        finally:
            self.depth -= 1

    def simple(self) -> Simple | None:
        words: list[Token] = []
        redirects: list[str] = []
        token = self.peek()
        if token is None:
            return None
        line = token.line
        closing_brackets = False
        while (token := self.peek()) is not None:
            if token.kind == "newline" and not closing_brackets:
                break
            if is_redirection(token):
                self.take()
                redirection = token.text
                if (target := self.peek()) is not None and target.kind == "word":
                    redirection += self.take().text
                redirects.append(redirection)
                continue
            if token.kind == "op" and token.text in _COMMAND_END_OPS and not closing_brackets:
                break
            self.take()
            if token.kind == "newline":
                continue
            words.append(token)
            if token.kind == "word" and token.text == "[[" and len(words) == 1:
                closing_brackets = True
            elif closing_brackets and token.text == "]]":
                closing_brackets = False
        if not words:
            return None
        return Simple(words=words, line=line, end_line=self.last_line(), redirects=redirects)

    def expect(self, word: str) -> None:
        self.skip_newlines()
        if self.at_word(word):
            self.take()

    def if_clause(self) -> Compound:
        line = self.take().line
        node = Compound(kind="if", line=line, end_line=line)
        while True:
            condition = self.command_list(stop_words=("then",), stop_ops=())
            self.expect("then")
            body = self.command_list(stop_words=("elif", "else", "fi"), stop_ops=())
            node.clauses.append((condition, body))
            if self.at_word("elif"):
                self.take()
                continue
            break
        if self.at_word("else"):
            self.take()
            node.has_else = True
            node.bodies.append(self.command_list(stop_words=("fi",), stop_ops=()))
        self.expect("fi")
        node.end_line = self.last_line()
        return node

    def loop(self) -> Compound:
        keyword = self.take()
        condition = self.command_list(stop_words=("do",), stop_ops=())
        self.expect("do")
        body = self.command_list(stop_words=("done",), stop_ops=())
        self.expect("done")
        return Compound(
            kind=keyword.text,
            line=keyword.line,
            end_line=self.last_line(),
            clauses=[(condition, body)],
        )

    def for_loop(self) -> Compound:
        keyword = self.take()
        words: list[Token] = []
        while (token := self.peek()) is not None and not (
            token.kind == "word" and token.text in ("do", "{")
        ):
            if self.take().kind == "word":
                words.append(token)
        closer = "}" if self.at_word("{") else "done"
        if self.peek() is not None:
            self.take()
        body = self.command_list(stop_words=(closer,), stop_ops=())
        self.expect(closer)
        return Compound(
            kind="for", line=keyword.line, end_line=self.last_line(), bodies=[body], words=words
        )

    def case(self) -> Compound:
        keyword = self.take()
        node = Compound(kind="case", line=keyword.line, end_line=keyword.line)
        while (token := self.peek()) is not None and not (
            token.kind == "word" and token.text == "in"
        ):
            node.words.append(self.take())
        if self.peek() is not None:
            self.take()
        while (token := self.peek()) is not None:
            self.skip_newlines()
            if self.peek() is None or self.at_word("esac"):
                break
            while (token := self.peek()) is not None and not (
                token.kind == "op" and token.text == ")"
            ):
                self.take()
            if self.peek() is not None:
                self.take()
            node.bodies.append(self.command_list(stop_words=("esac",), stop_ops=()))
            if self.at_op(";;", ";&", ";;&"):
                self.take()
        self.expect("esac")
        node.end_line = self.last_line()
        return node

    def group(self) -> Compound:
        line = self.take().line
        body = self.command_list(stop_words=("}",), stop_ops=())
        self.expect("}")
        return Compound(kind="group", line=line, end_line=self.last_line(), bodies=[body])

    def subshell(self) -> Compound:
        line = self.take().line
        body = self.command_list(stop_words=(), stop_ops=(")",))
        if self.at_op(")"):
            self.take()
        return Compound(kind="subshell", line=line, end_line=self.last_line(), bodies=[body])

    def function(self) -> Compound:
        """``name() body`` or ``function name body``: ``words`` holds the name."""
        first = self.take()
        name = first
        if first.text == "function" and (token := self.peek()) is not None and token.kind == "word":
            name = self.take()
        if self.at_op("("):
            self.take()
            if self.at_op(")"):
                self.take()
        self.skip_newlines()
        node = Compound(kind="function", line=first.line, end_line=first.line, words=[name])
        body = self.command()
        if body is not None:
            node.bodies.append(
                [AndOr(first=Pipeline(commands=[body], negated=False, line=body.line))]
            )
        node.end_line = self.last_line()
        return node
