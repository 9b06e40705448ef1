"""The package's own source, read as modules and syntax trees (for tests about the code)."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import forensics

PACKAGE = Path(forensics.__file__).parent


@dataclass(frozen=True)
class SourceModule:
    name: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def modules() -> Iterator[SourceModule]:
    """Every module of ``forensics``, ``probes`` and ``reports`` included (symlinked in)."""
    for path in _python_files(PACKAGE):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(("forensics", *parts))
        yield SourceModule(name, path, ast.parse(path.read_text(), str(path)))


def _python_files(root: Path) -> list[Path]:
    # os.walk, not Path.rglob: probes/ and reports/ are symlinks that rglob does not follow.
    found = []
    for directory, _, files in os.walk(root, followlinks=True):
        found += [Path(directory) / name for name in files if name.endswith(".py")]
    return sorted(found)
