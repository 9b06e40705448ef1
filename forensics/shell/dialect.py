"""Which shell reads a script: the interpreter when known, else the shebang on line 1, else
what the text itself uses.

The kernel honours ``#!`` only as the first two bytes of the file; a shebang on line 3
(after a blank line or a licence comment) is a comment, and the script runs under whatever
shell started it (``sh x.sh``, or the calling shell when ``execve`` refuses the file). Then
the content decides, and the analysis says so.

>>> read_dialect(None, ["#!/usr/bin/env -S bash -e", "echo hi"])
('bash', None)
>>> print(read_dialect(None, ["", "#!/bin/bash", "if [[ -n $x ]]; then :; fi"])[1])
its shebang `#!/bin/bash` is on line 2, not line 1, so the kernel ignores it; read as bash
because it uses `[[` (line 3)
>>> print(read_dialect(None, ["set -e", "./d | tee log"])[1])
it has no shebang on line 1 and nothing shell-specific; read as any POSIX shell, fixes
given for bash
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ash", "busybox", "ksh", "mksh"})
# Lines looked at for a misplaced shebang: a blank line or a comment header above it.
_SHEBANG_REACH = 20

# Syntax only bash (or ksh/zsh) reads; dash stops on each. The first one found decides.
_BASHISMS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), shown)
    for pattern, shown in (
        (r"\[\[", "`[[`"),
        (r"^\s*function\s+[A-Za-z_]", "`function NAME`"),
        (r"\bPIPESTATUS\b", "`PIPESTATUS`"),
        (r"pipefail", "pipefail"),
        (r"(^|[\s;])[A-Za-z_][A-Za-z0-9_]*\+?=\(", "an array `NAME=(...)`"),
        (r"(^|[\s;])source\s", "`source`"),
        (r"<<<", "a here-string `<<<`"),
        (r"\$\{[A-Za-z_][A-Za-z0-9_]*//", "`${VAR//...}`"),
        (r"(^|[\s;])(declare|shopt|mapfile|readarray)\s", "a bash builtin"),
        (r"\$'", "`$'...'` quoting"),
        (r"&>", "`&>`"),
    )
)


def read_dialect(interpreter: str | None, lines: Sequence[str]) -> tuple[str, str | None]:
    """The dialect and, when it was not given, a sentence saying how it was inferred."""
    if interpreter:
        name = interpreter.rsplit("/", 1)[-1]
        return (name if name in SHELLS else "unknown"), None
    first = lines[0] if lines else ""
    if first.startswith("#!"):
        return shebang_dialect(first), None
    misplaced = next(
        (
            (number, line.strip())
            for number, line in enumerate(lines[1:_SHEBANG_REACH], start=2)
            if line.strip().startswith("#!")
        ),
        None,
    )
    where = (
        f"its shebang `{misplaced[1][:60]}` is on line {misplaced[0]}, not line 1, so the "
        "kernel ignores it"
        if misplaced is not None
        else "it has no shebang on line 1"
    )
    found = _first_bashism(lines)
    if found is not None:
        shown, number = found
        return "bash", f"{where}; read as bash because it uses {shown} (line {number})"
    return (
        "unknown",
        f"{where} and nothing shell-specific; read as any POSIX shell, fixes given for bash",
    )


def shebang_dialect(first_line: str) -> str:
    """The shell a ``#!`` line names (``env`` and its options skipped), else ``unknown``.

    >>> shebang_dialect("#!/usr/bin/env bash"), shebang_dialect("#!/bin/sh -e")
    ('bash', 'sh')
    """
    words = first_line[2:].split() if first_line.startswith("#!") else []
    words = [word for word in words if not word.startswith("-")]
    if words and words[0].rsplit("/", 1)[-1] == "env":
        words = [word for word in words[1:] if "=" not in word]
    if words and words[0].rsplit("/", 1)[-1] in SHELLS:
        return words[0].rsplit("/", 1)[-1]
    return "unknown"


def _first_bashism(lines: Sequence[str]) -> tuple[str, int] | None:
    for number, line in enumerate(lines, start=1):
        code = line.lstrip()
        if not code or code.startswith("#"):
            continue
        for pattern, shown in _BASHISMS:
            if pattern.search(code):
                return shown, number
    return None
