"""The package's modules import each other without a loop: every import, including those
under ``TYPE_CHECKING`` and inside functions, read from the source with ``ast``."""

from __future__ import annotations

import ast

from tests.source_tree import SourceModule, modules


def _imports(module: SourceModule, known: set[str]) -> set[str]:
    """The package's modules that ``module`` imports (a package's own ``__init__`` being run
    first by Python is not counted: it is no choice of the importer)."""
    found = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.name if module.is_package else module.name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in known else base)
    return {name for name in found if name in known and name != module.name}


def import_graph() -> dict[str, set[str]]:
    every = list(modules())
    known = {module.name for module in every}
    return {module.name: _imports(module, known) for module in every}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted.

    >>> cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for target in sorted(graph.get(name, ())):
            if target not in index:
                visit(target)
                low[name] = min(low[name], low[target])
            elif target in on_stack:
                low[name] = min(low[name], index[target])
        if low[name] == index[name]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def test_no_module_of_the_package_imports_itself_back() -> None:
    graph = import_graph()
    assert "forensics.probes.cgroup" in graph and graph["forensics.judge.analysis"]
    assert cycles(graph) == []


def test_the_scan_sees_a_loop_when_there_is_one() -> None:
    graph = import_graph()
    graph["forensics.core.models"] = graph["forensics.core.models"] | {"forensics.cli.app"}
    assert any("forensics.core.models" in group for group in cycles(graph))
