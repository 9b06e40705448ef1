"""Read the output of ``head -v -c N FILE...``: many small files in one process on the host.

Probes read /proc, /sys and cgroup files this way, one process for all of them, instead
of one ``cat`` per file. ``head`` prints ``==> PATH <==`` before each file it could open
and nothing for one it could not (that goes to stderr), so a missing file is simply absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def split_head_output(text: str, paths: Sequence[str]) -> dict[str, str]:
    """Map each requested path that was read to its content.

    Only headers naming the requested paths, in the requested order, count as boundaries,
    so a file whose content looks like a header cannot invent another file.

    >>> out = "==> /proc/uptime <==\\n12.5 20.1\\n\\n==> /proc/1/comm <==\\ntini\\n"
    >>> split_head_output(out, ["/proc/uptime", "/nope", "/proc/1/comm"])
    {'/proc/uptime': '12.5 20.1\\n', '/proc/1/comm': 'tini\\n'}
    """
    return {path: dumped.content for path, dumped in dumped_files(text, paths).items()}


@dataclass(frozen=True)
class DumpedFile:
    """A file's content and the 1-based section line where that content starts."""

    content: str
    first_line: int

    def line_of(self, index: int) -> int:
        """Section line number of the content's line ``index`` (0-based)."""
        return self.first_line + index

    def keyed(self) -> dict[str, str]:
        """A ``key value`` file (``memory.events``, ``memory.oom_control``) as a mapping.

        >>> DumpedFile("oom 2\\noom_kill 1\\n", 5).keyed()
        {'oom': '2', 'oom_kill': '1'}
        """
        pairs = (line.split(None, 1) for line in self.content.splitlines())
        return {pair[0]: pair[1].strip() for pair in pairs if len(pair) == 2}

    def key_index(self, key: str) -> int | None:
        """The 0-based content line that starts with ``key``, None when none does.

        >>> DumpedFile("oom 2\\noom_kill 1\\n", 5).key_index("oom_kill")
        1
        """
        for index, line in enumerate(self.content.splitlines()):
            if line.split(None, 1)[:1] == [key]:
                return index
        return None


def dumped_files(text: str, paths: Sequence[str]) -> dict[str, DumpedFile]:
    """Like ``split_head_output``, keeping where each file starts in the section, so that
    findings can cite section line numbers.

    >>> out = "tool x\\n==> /a <==\\n1\\n2\\n\\n==> /b <==\\n3\\n"
    >>> dumped_files(out, ["/a", "/b"])["/b"]
    DumpedFile(content='3\\n', first_line=7)
    """
    found: dict[str, DumpedFile] = {}
    current: str | None = None
    start = 0
    buffer: list[str] = []
    remaining = list(paths)
    for number, line in enumerate(_lines_keeping_newline(text), start=1):
        path = _header_path(line, remaining)
        if path is not None:
            if current is not None:
                found[current] = DumpedFile(_strip_separator(buffer), start)
            current, buffer, start = path, [], number + 1
            remaining = remaining[remaining.index(path) + 1 :]
            continue
        buffer.append(line)
    if current is not None:
        found[current] = DumpedFile("".join(buffer), start)
    return found


def _header_path(line: str, candidates: Sequence[str]) -> str | None:
    if not (line.startswith("==> ") and line.rstrip("\n").endswith(" <==")):
        return None
    path = line.rstrip("\n")[4:-4]
    return path if path in candidates else None


def _strip_separator(buffer: list[str]) -> str:
    """``head`` writes one newline before the next header; it is not part of the file."""
    text = "".join(buffer)
    return text[:-1] if text.endswith("\n") else text


def _lines_keeping_newline(text: str) -> list[str]:
    """Split on newline only: /proc content may hold \\r, \\f or NUL, which are not lines."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
