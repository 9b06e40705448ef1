"""The process tree around the processes that matter, not the whole table.

For each marked process (the focus, the zombies): its ancestors up to PID 1 and its
children, drawn like ``pstree`` with box-drawing prefixes so the same lines read in a
Markdown code block and in an HTML ``<pre>``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from reports.escaping import inert

MAX_DEPTH = 64
"""Ancestor walks stop here: a corrupt or hostile table may hold a parent loop."""


@dataclass(frozen=True)
class ProcessRow:
    pid: int
    ppid: int
    name: str
    state: str = ""
    note: str = ""


@dataclass(frozen=True)
class TreeLine:
    """One printed line; ``text`` is inert (no control characters) but not yet escaped."""

    text: str
    pid: int
    marked: bool


def tree_around(rows: Sequence[ProcessRow], marked: Collection[int]) -> list[TreeLine]:
    """Lines of the tree holding the marked pids, their ancestors and their children.

    >>> rows = [ProcessRow(1, 0, "tini", "S"), ProcessRow(40, 1, "bash", "S", "benchmark.sh"),
    ...     ProcessRow(4242, 40, "cuzk", "Z", "3 threads alive"), ProcessRow(4243, 40, "tee", "S"),
    ...     ProcessRow(77, 1, "sshd", "S")]
    >>> for line in tree_around(rows, {4242}):
    ...     print(line.text)
    1 tini [S]
    └─ 40 bash [S] benchmark.sh
       └─ 4242 cuzk [Z] 3 threads alive  <= here
    """
    by_pid = {row.pid: row for row in rows}
    kept: set[int] = set()
    for pid in marked:
        if pid not in by_pid:
            continue
        kept.update(_ancestors(pid, by_pid))
        kept.update(row.pid for row in rows if row.ppid == pid)
    children: dict[int, list[int]] = {}
    roots = []
    for pid in sorted(kept):
        parent = by_pid[pid].ppid
        if parent in kept and parent != pid:
            children.setdefault(parent, []).append(pid)
        else:
            roots.append(pid)
    lines: list[TreeLine] = []
    seen: set[int] = set()
    # A parent loop has no root: whatever the roots did not reach is drawn from itself.
    for root in roots + sorted(kept):
        if root not in seen:
            _draw(root, "", "", by_pid, children, set(marked), lines, seen)
    return lines


def _ancestors(pid: int, by_pid: dict[int, ProcessRow]) -> list[int]:
    chain = [pid]
    while len(chain) < MAX_DEPTH:
        parent = by_pid[chain[-1]].ppid
        if parent not in by_pid or parent in chain:
            break
        chain.append(parent)
    return chain


def _draw(
    pid: int,
    lead: str,
    branch: str,
    by_pid: dict[int, ProcessRow],
    children: dict[int, list[int]],
    marked: set[int],
    lines: list[TreeLine],
    seen: set[int],
) -> None:
    # Recursive over depth, which the ancestor walk bounds by MAX_DEPTH.
    if pid in seen:
        return
    seen.add(pid)
    row = by_pid[pid]
    words = [str(row.pid), inert(row.name)]
    if row.state:
        words.append(f"[{inert(row.state)}]")
    if row.note:
        words.append(inert(row.note))
    text = lead + branch + " ".join(words) + ("  <= here" if pid in marked else "")
    lines.append(TreeLine(text=text, pid=pid, marked=pid in marked))
    kids = children.get(pid, [])
    below = lead + ("   " if branch == "└─ " else "│  " if branch else "")
    for index, child in enumerate(kids):
        last = index == len(kids) - 1
        _draw(child, below, "└─ " if last else "├─ ", by_pid, children, marked, lines, seen)
