"""One script's whole check: its text's shape, the masking rules, and ShellCheck.

Shared by the ``scripts`` probe (scripts read on a host) and ``forensics lint-script``
(files here), so a fix can be checked locally with exactly the rules that flagged it.
``describe_text`` and ``find_masking`` are pure; ``lint`` adds the ShellCheck run.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from forensics.shell.masking import MaskingAnalysis, MaskingIssue
from forensics.shell.shellcheck import ShellCheckNote, ShellCheckRun, run_shellcheck

LONG_LINE = 4096


class TextShape(BaseModel):
    """What kind of text a script is, as far as reading it goes."""

    lines: int
    longest_line: int = Field(description="Characters in the longest line.")
    utf8: bool = Field(description="False when bytes were not UTF-8 (shown as U+FFFD).")
    line_endings: str = Field(description="lf, crlf, mixed or none.")
    binary: bool = Field(description="Holds NUL bytes: not a shell script at all.")

    def notes(self) -> list[str]:
        """Plain sentences for whatever is unusual; empty for an ordinary script."""
        notes = []
        if self.binary:
            notes.append("it holds NUL bytes: this is not a text script")
        if not self.utf8:
            notes.append(
                "it is not UTF-8 (latin-1?): those bytes show as U+FFFD; lines are unaffected"
            )
        if self.line_endings in ("crlf", "mixed"):
            notes.append(
                f"it has {self.line_endings.upper()} line endings: bash reads `then\\r` and "
                "stops with `$'\\r': command not found` (convert with dos2unix)"
            )
        if self.longest_line > LONG_LINE:
            notes.append(f"its longest line has {self.longest_line} characters")
        return notes


def describe_text(text: str) -> TextShape:
    """The shape of ``text`` (already decoded, invalid UTF-8 replaced by U+FFFD).

    >>> describe_text("#!/bin/sh\\r\\necho caf\\ufffd\\r\\n").model_dump()
    {'lines': 2, 'longest_line': 9, 'utf8': False, 'line_endings': 'crlf', 'binary': False}
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    newlines = text.count("\n")
    crlf = text.count("\r\n")
    endings = "none" if not newlines else "crlf" if crlf == newlines else "mixed" if crlf else "lf"
    return TextShape(
        lines=len(lines),
        longest_line=max((len(line.rstrip("\r")) for line in lines), default=0),
        utf8="\ufffd" not in text,
        line_endings=endings,
        binary="\x00" in text,
    )


@dataclass(frozen=True)
class ScriptLint:
    """The masking analysis with what ShellCheck said, sorted by who it supports."""

    masking: MaskingAnalysis
    shellcheck: ShellCheckRun

    def agreeing(self, issue: MaskingIssue) -> list[int]:
        """The codes ShellCheck gave on the lines of ``issue`` (where it bites, and the
        reads it merged): the same problem seen twice."""
        if issue.file is not None:
            return []
        lines = {issue.line, *issue.related_lines}
        return sorted({note.code for note in self.shellcheck.notes if note.line in lines})

    def other_notes(self) -> list[ShellCheckNote]:
        """ShellCheck's kept notes on lines where no masking issue is."""
        covered = {
            line
            for issue in self.masking.issues
            if issue.file is None
            for line in (issue.line, *issue.related_lines)
        }
        return [note for note in self.shellcheck.notes if note.line not in covered]


def lint(text: str, masking: MaskingAnalysis) -> ScriptLint:
    """Add ShellCheck's view to an existing analysis of ``text`` (runs a program)."""
    return ScriptLint(masking=masking, shellcheck=run_shellcheck(text, masking.dialect))
