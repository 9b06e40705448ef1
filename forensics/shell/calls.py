"""What a script runs besides its own top level: its functions, and the files it ``source``s.

The masking rules judge a line with the shell options in force when it runs, so a
function body is judged at each of its call sites, and a sourced file where the ``source``
command stands. This module finds the definitions and names the sourced files; the walk
itself is in ``masking.py``.

>>> from forensics.shell.syntax import parse_script
>>> program = parse_script("run() { ./d | tee log; }\\nfunction stop { kill $1; }\\nrun\\n")
>>> sorted(function_table([program]))
['run', 'stop']
>>> sourced_name('"$(dirname "$0")/lib/env.sh"'), sourced_name("${HOME}/x.sh"), sourced_name("$1")
('lib/env.sh', 'x.sh', None)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from forensics.shell.syntax import AndOr, Compound, Simple, unquote

# A leading expansion that names a directory: `$(dirname "$0")/`, `${ROOT}/`, `$DIR/`.
_DIRECTORY_PREFIX = re.compile(
    r"^(?:\$\((?:[^()]|\([^()]*\))*\)|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*)/+"
)


@dataclass(frozen=True)
class Options:
    """The shell options that decide whether a status is lost: ``set -e``, pipefail."""

    errexit: bool = False
    pipefail: bool = False

    def changed(self, changes: list[tuple[str, bool]]) -> Options:
        errexit, pipefail = self.errexit, self.pipefail
        for option, value in changes:
            if option == "errexit":
                errexit = value
            elif option == "pipefail":
                pipefail = value
        return Options(errexit=errexit, pipefail=pipefail)


def option_changes(words: list[str]) -> list[tuple[str, bool]]:
    """``set``-style arguments to (option, on) pairs.

    >>> option_changes(["-euo", "pipefail", "+o", "errexit", "-x"])
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


def command_option_changes(command: Simple) -> list[tuple[str, bool]]:
    """What a ``set`` or ``shopt -s/-u -o`` command changes; empty for other commands."""
    words = [unquote(token.text) for token in command.words]
    if words[:1] == ["set"]:
        return option_changes(words[1:])
    if words[:1] == ["shopt"]:
        flags = "".join(word[1:] for word in words[1:] if word.startswith("-"))
        if "o" in flags:
            value = "s" in flags
            return [(word, value) for word in words[1:] if not word.startswith("-")]
    return []


def function_name(function: Compound) -> str:
    return function.words[0].text if function.words else ""


def function_table(programs: list[list[AndOr]]) -> dict[str, Compound]:
    """Every function defined anywhere in ``programs`` by name; a later definition wins,
    as it does when the shell runs them in order."""
    table: dict[str, Compound] = {}
    for program in programs:
        for function in _functions(program):
            table[function_name(function)] = function
    return table


def _functions(items: list[AndOr]) -> Iterator[Compound]:
    stack = [items]
    while stack:
        for item in stack.pop():
            for pipeline in item.pipelines:
                for command in pipeline.commands:
                    if isinstance(command, Compound):
                        if command.kind == "function":
                            yield command
                        stack.extend(part for clause in command.clauses for part in clause)
                        stack.extend(command.bodies)


def sourced_name(word: str) -> str | None:
    """The file a ``source WORD`` reads, relative to the script's directory (or an absolute
    path); None when it depends on a value only known at run time."""
    name = unquote(word)
    while (match := _DIRECTORY_PREFIX.match(name)) is not None:
        name = name[match.end() :]
    if not name or "$" in name or "`" in name or "*" in name:
        return None
    return name.removeprefix("./")
