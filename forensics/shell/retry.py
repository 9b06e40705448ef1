"""Which loops retry: a loop that runs the same command again when it fails.

A decision on a masked status only matters as a retry when a failure would send the loop
round again: ``for attempt in 1 2 3; do daemon | tee log; rc=$?; [ "$rc" -eq 0 ] &&
break; done`` retries (it leaves on success), a loop over batch sizes that stops at the
first failure does not (it gives up, and each round runs another command).

>>> from forensics.shell.syntax import parse_script
>>> loop = next(loops(parse_script(
...     'for a in 1 2; do\\n ./d | tee l\\n rc=$?\\n if [ "$rc" -eq 0 ]; then break; fi\\ndone')))
>>> [(item.line, retries) for item, retries in decisions(loop.bodies[0]) if retries]
[(4, True)]
>>> reruns(loop, loop.bodies[0][0].first)
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from forensics.shell.syntax import (
    AndOr,
    Compound,
    Pipeline,
    Simple,
    base_name,
    inner_lists,
    outer_text,
)

# A test that holds when the status it reads is 0: `[ "$rc" -eq 0 ]`, `(( rc == 0 ))`.
_SUCCESS_TEST = re.compile(r"(-eq|==?)\s*[\"']?0\b[\"']?|\b0[\"']?\s*(-eq|==?)\s")
_FAILURE_TEST = re.compile(r"(-ne|!=|-gt|-ge)\s*[\"']?[01]\b|\b0[\"']?\s*(-ne|!=|-lt)\s")


def loops(items: list[AndOr]) -> Iterator[Compound]:
    for item in items:
        for pipeline in item.pipelines:
            for command in pipeline.commands:
                if isinstance(command, Compound):
                    if command.kind in ("while", "until", "for"):
                        yield command
                    for list_ in inner_lists(command):
                        yield from loops(list_)


def decisions(items: list[AndOr]) -> Iterator[tuple[AndOr, bool]]:
    """Every condition in ``items`` with whether it makes the loop run again on a failure:
    an ``if`` (or ``&&``/``||`` list) that leaves the loop on success, or goes round on
    failure. A decision that breaks out or exits on failure gives up: no retry."""
    for item in items:
        yield item, _retries_on_failure(item)
        for pipeline in item.pipelines:
            for command in pipeline.commands:
                if not isinstance(command, Compound) or command.kind in ("function",):
                    continue
                if command.kind == "if":
                    for index, (condition, body) in enumerate(command.clauses):
                        else_lists = [b for _, b in command.clauses[index + 1 :]] + command.bodies
                        for part in condition:
                            yield part, _branch_retries(part, body, else_lists)
                for list_ in [body for _, body in command.clauses] + command.bodies:
                    if command.kind not in ("while", "until", "for"):
                        yield from decisions(list_)


def _branch_retries(condition: AndOr, then: list[AndOr], otherwise: list[list[AndOr]]) -> bool:
    polarity = _polarity(condition)
    if polarity is None:
        return False
    taken_on_failure = then if polarity == "failure" else None
    taken_on_success = then if polarity == "success" else None
    for branch in otherwise:
        if polarity == "failure":
            taken_on_success = taken_on_success or branch
        else:
            taken_on_failure = taken_on_failure or branch
    if taken_on_success is not None and _leaves_loop(taken_on_success):
        return True
    return taken_on_failure is not None and _names_control(taken_on_failure, {"continue"})


def _retries_on_failure(item: AndOr) -> bool:
    """``[ "$rc" -eq 0 ] && break`` and ``[ "$rc" -ne 0 ] || break`` retry."""
    if not item.rest:
        return False
    polarity = _polarity(AndOr(first=item.first))
    operator, following = item.rest[0]
    if polarity is None or not _pipeline_controls(following, {"break", "return", "exit"}):
        return False
    return (operator == "&&") == (polarity == "success")


def _polarity(condition: AndOr) -> str | None:
    """``success`` when the test holds for a zero status, ``failure`` for a non-zero one."""
    if condition.rest:
        return None
    text = " ".join(
        outer_text(token.text)
        for command in condition.first.commands
        if isinstance(command, Simple)
        for token in command.words
    )
    if _SUCCESS_TEST.search(text):
        polarity = "success"
    elif _FAILURE_TEST.search(text):
        polarity = "failure"
    else:
        return None
    flipped = condition.first.negated != bool(re.search(r"(^|\s)(\[|test|\[\[)\s+!\s", text))
    if flipped:
        return "failure" if polarity == "success" else "success"
    return polarity


def _leaves_loop(items: list[AndOr]) -> bool:
    return _names_control(items, {"break", "return", "exit"})


def _names_control(items: list[AndOr], names: set[str]) -> bool:
    return any(_pipeline_controls(p, names) for item in items for p in item.pipelines)


def _pipeline_controls(pipeline: Pipeline, names: set[str]) -> bool:
    for command in pipeline.commands:
        if isinstance(command, Simple):
            if (base_name(command) or "") in names:
                return True
        elif command.kind in ("group", "if", "case", "subshell") and any(
            _names_control(list_, names) for list_ in inner_lists(command)
        ):
            return True
    return False


def reruns(loop: Compound, pipeline: Pipeline) -> bool:
    """The loop's body holds ``pipeline`` and, for a ``for`` loop, the pipeline does not
    use the loop's variable (over attempts, not over batch sizes)."""
    if not loop.line <= pipeline.line <= loop.end_line:
        return False
    if loop.kind != "for" or not loop.words:
        return True
    variable = re.escape(loop.words[0].text)
    reference = re.compile(rf"\$\{{?{variable}\b")
    return not any(
        reference.search(token.text)
        for command in pipeline.commands
        if isinstance(command, Simple)
        for token in command.words
    )
