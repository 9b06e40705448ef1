"""The process tree around the processes that matter, not the whole table.

For each marked process (the focus, the zombies): its ancestors up to PID 1 and its
children, drawn like ``pstree`` with box-drawing prefixes so the same lines read in a
Markdown code block and in an HTML ``<pre>``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from forensics.core.escaping import inert
from forensics.probes.processes import ProcessEntry, ProcessesFacts, ProcessTree

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


MAX_COMMAND = 100
MAX_CHILDREN = 10


def tree_lines(facts: ProcessesFacts, tree: ProcessTree) -> list[TreeLine]:
    """The lines of one of the probe's trees (around the focus or a zombie).

    >>> from forensics.probes.processes import ProcessEntry
    >>> def p(pid, ppid, name, state, argv, wchan=None, threads=1):
    ...     return ProcessEntry(pid=pid, ppid=ppid, name=name, state=state, threads=threads,
    ...                         start_ticks=0, argv=argv, cmdline=" ".join(argv), wchan=wchan)
    >>> facts = ProcessesFacts(processes=[
    ...     p(1, 0, "tini", "S", ["/tini", "--", "bash", "run.sh"]),
    ...     p(812, 1, "bash", "S", ["bash", "run.sh"], wchan="do_wait"),
    ...     p(900, 812, "cuzk", "Z", [], threads=3)])
    >>> tree = ProcessTree(subject=900, why=["zombie"], ancestors=[812, 1], children=[])
    >>> for line in tree_lines(facts, tree):
    ...     print(line.text)
    1 tini [S] /tini -- bash run.sh
    └─ 812 bash [S do_wait] bash run.sh
       └─ 900 cuzk [Z, 3 threads] <defunct>  <= here
    """
    pids = [*tree.ancestors, tree.subject, *tree.children[:MAX_CHILDREN]]
    rows = [row for row in (_row(facts, pid) for pid in pids) if row is not None]
    lines = tree_around(rows, {tree.subject})
    if len(tree.children) > MAX_CHILDREN:
        more = len(tree.children) - MAX_CHILDREN
        lines.append(TreeLine(text=f"... {more} more children", pid=0, marked=False))
    return lines


def _row(facts: ProcessesFacts, pid: int) -> ProcessRow | None:
    entry = facts.by_pid(pid)
    if entry is None:
        return None
    return ProcessRow(entry.pid, entry.ppid, _flat(entry.name), _status(entry), _command(entry))


def _status(entry: ProcessEntry) -> str:
    words = entry.state
    if entry.threads > 1:
        words += f", {entry.threads} threads"
        stuck = sum(1 for thread in entry.thread_states if thread.state == "D")
        if stuck:
            words += f" ({stuck} in D)"
    if entry.wchan:
        words += f" {_flat(entry.wchan)}"
    return words


def _command(entry: ProcessEntry) -> str:
    if entry.is_zombie:
        return "<defunct>"
    if not entry.cmdline:
        return f"[{_flat(entry.name)}]"
    text = _flat(entry.cmdline)
    return text if len(text) <= MAX_COMMAND else text[: MAX_COMMAND - 3] + "..."


def _flat(text: str) -> str:
    """One line: a newline in a process name must not start a fake tree line."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
