"""The process tree around one process as indented text: ancestors from PID 1 down, the
process itself marked, then its children. Host strings are made inert here."""

from __future__ import annotations

from probes.processes import ProcessEntry, ProcessesFacts, ProcessTree
from reports.escaping import inert

MAX_CHILDREN = 10
MAX_COMMAND = 120


def tree_text(facts: ProcessesFacts, tree: ProcessTree) -> str:
    """Render ``tree`` one process per line, two spaces of indent per generation.

    >>> from probes.processes import ProcessEntry
    >>> def p(pid, ppid, name, state, argv, wchan=None, threads=1):
    ...     return ProcessEntry(pid=pid, ppid=ppid, name=name, state=state, threads=threads,
    ...                         start_ticks=0, argv=argv, cmdline=" ".join(argv), wchan=wchan)
    >>> facts = ProcessesFacts(processes=[
    ...     p(1, 0, "tini", "S", ["/tini", "--", "bash", "run.sh"]),
    ...     p(812, 1, "bash", "S", ["bash", "run.sh"], wchan="do_wait"),
    ...     p(900, 812, "cuzk", "Z", [], threads=3)])
    >>> tree = ProcessTree(subject=900, why=["zombie"], ancestors=[812, 1], children=[])
    >>> print(tree_text(facts, tree))
    1 tini [S] /tini -- bash run.sh
      812 bash [S do_wait] bash run.sh
        900 cuzk [Z, 3 threads] <defunct>    <== zombie
    """
    lines = []
    depth = 0
    for pid in reversed(tree.ancestors):
        lines.append(_line(facts, pid, depth, ""))
        depth += 1
    lines.append(_line(facts, tree.subject, depth, "    <== " + ", ".join(tree.why)))
    for pid in tree.children[:MAX_CHILDREN]:
        lines.append(_line(facts, pid, depth + 1, ""))
    if len(tree.children) > MAX_CHILDREN:
        more = len(tree.children) - MAX_CHILDREN
        lines.append("  " * (depth + 1) + f"... {more} more children")
    return "\n".join(lines)


def _line(facts: ProcessesFacts, pid: int, depth: int, marker: str) -> str:
    entry = facts.by_pid(pid)
    indent = "  " * depth
    if entry is None:
        return f"{indent}{pid} (gone){marker}"
    return f"{indent}{pid} {_flat(entry.name)} [{_status(entry)}] {_command(entry)}{marker}"


def _status(entry: ProcessEntry) -> str:
    words = entry.state
    if entry.threads > 1:
        words += f", {entry.threads} threads"
        stuck = sum(1 for t in entry.thread_states if t.state == "D")
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
    """One line, inert: a newline in a process name must not start a fake tree line."""
    return inert(text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t"))
