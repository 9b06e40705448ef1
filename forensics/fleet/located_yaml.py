"""YAML that remembers where each value came from, so that errors can name ``file:line``.

PyYAML's composer keeps a mark on every node; we walk the node tree once to map each value's
path (``("hosts", 2, "port")``) to its 1-based line, and build the data with the safe
constructor (anchors, aliases and ``<<`` merges work as usual). Duplicate keys, which YAML
forbids but PyYAML silently resolves in favour of the last one, are errors here.

Inventories come from other people, so reading one is bounded: the file at ``MAX_BYTES``
(``read_bounded``), the document, aliases expanded, at ``MAX_NODES`` nodes and
``MAX_DEPTH`` levels of nesting. A "billion
laughs" (nine levels of nine aliases: ten lines, 387 million nodes once expanded) stops
at the bound instead of taking the machine's memory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from forensics.core.files import read_bounded as read_bounded_bytes

Path = tuple[str | int, ...]

MAX_BYTES = 4 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64


class YamlProblem(Exception):
    """Unreadable YAML: the 1-based line and what is wrong there."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"{line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True)
class LocatedYaml:
    data: object
    lines: dict[Path, int]

    def line_of(self, path: Sequence[str | int]) -> int:
        """The line of ``path``, or of its nearest ancestor that has one (a missing field is
        reported where its mapping starts)."""
        key = tuple(path)
        while key and key not in self.lines:
            key = key[:-1]
        return self.lines.get(key, 1)


def dotted(path: Sequence[str | int]) -> str:
    """A path the way an operator reads it.

    >>> dotted(("groups", "vast", "hosts", 2, "port"))
    'groups.vast.hosts[2].port'
    >>> dotted(())
    '(top level)'
    """
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def load_located(text: str) -> LocatedYaml:
    """Parse one YAML document; raise ``YamlProblem`` with a line for anything unreadable.

    >>> doc = load_located("hosts:\\n  - name: a\\n    port: 22\\n  - name: b\\n    port: x\\n")
    >>> doc.data["hosts"][1], doc.line_of(("hosts", 1, "port")), doc.line_of(("hosts", 1, "user"))
    ({'name': 'b', 'port': 'x'}, 5, 4)
    >>> load_located("a: 1\\na: 2\\n")
    Traceback (most recent call last):
    ...
    forensics.fleet.located_yaml.YamlProblem: 2: a: duplicate key (first at line 1)
    """
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as error:
        raise _unreadable_character(text, error) from error
    except yaml.YAMLError as error:
        raise YamlProblem(1, f"YAML syntax: {str(error).splitlines()[0]}") from error
    try:
        node = loader.get_single_node()
        if node is None:
            return LocatedYaml(data=None, lines={})
        lines: dict[Path, int] = {(): node.start_mark.line + 1}
        _walk(node, (), lines, set(), [MAX_NODES])
        data = loader.construct_document(node)
    except yaml.reader.ReaderError as error:
        raise _unreadable_character(text, error) from error
    except RecursionError as error:  # the composer recurses once per level of nesting
        raise YamlProblem(1, f"nested more than {MAX_DEPTH} levels deep; refused") from error
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = f"YAML syntax: {error.problem or error.context or 'unreadable'}"
        if error.context and error.problem and error.context_mark is not None:
            problem += f" ({error.context} that began at line {error.context_mark.line + 1})"
        raise YamlProblem(line, problem) from error
    except yaml.YAMLError as error:
        raise YamlProblem(1, f"YAML syntax: {str(error).splitlines()[0]}") from error
    finally:
        loader.dispose()
    return LocatedYaml(data=data, lines=lines)


def read_bounded(path: os.PathLike[str] | str, limit: int = MAX_BYTES) -> str:
    """The UTF-8 text of ``path``, refused (``ValueError``) past ``limit`` bytes."""
    return read_bounded_bytes(path, limit).decode("utf-8")


def _unreadable_character(text: str, error: yaml.reader.ReaderError) -> YamlProblem:
    """The character PyYAML refuses (a raw control byte), named by its code, never echoed.

    >>> load_located("hosts:\\n  - name: a\\x1b]0;x\\n")
    Traceback (most recent call last):
    ...
    forensics.fleet.located_yaml.YamlProblem: 2: YAML syntax: raw control character U+001B
    """
    line = text.count("\n", 0, max(error.position, 0)) + 1
    code = error.character if isinstance(error.character, int) else ord(str(error.character)[:1])
    return YamlProblem(
        line,
        f"YAML syntax: raw control character U+{code:04X}",
    )


def _walk(
    node: yaml.Node, path: Path, lines: dict[Path, int], active: set[int], budget: list[int]
) -> None:
    if id(node) in active:  # a recursive alias (&a [*a]): its lines are already known
        return
    if len(path) > MAX_DEPTH:
        raise YamlProblem(
            node.start_mark.line + 1, f"nested more than {MAX_DEPTH} levels deep; refused"
        )
    budget[0] -= 1
    if budget[0] < 0:
        raise YamlProblem(
            node.start_mark.line + 1,
            f"more than {MAX_NODES} values once aliases are expanded; refused "
            "(aliases that multiply, as in a 'billion laughs' file)",
        )
    active = active | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: dict[object, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                key_node, yaml.ScalarNode
            ):
                # Not a path of its own, but what it brings in counts towards the bound.
                _walk(key_node, path, {}, active, budget)
                _walk(value_node, path, {}, active, budget)
                continue
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlProblem(
                    line, f"{dotted((*path, key))}: duplicate key (first at line {seen[key]})"
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, active, budget)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _walk(item, (*path, index), lines, active, budget)
