"""The package's internal import graph, imports inside function bodies counted (#29).

``python -m tests.unit.import_graph`` prints the counts, the share deferred into function
bodies, and the members of every import cycle (Tarjan's strongly connected components);
``tests/unit/test_layering.py`` holds the floors and the limits over the same graph.
An import under ``if TYPE_CHECKING:`` is not run, so it is no edge."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "harness_cli"


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    deferred: bool
    """Inside a function body: run when the function is, not when the module is imported."""


@dataclass
class Graph:
    modules: dict[str, Path]
    imports: list[Import] = field(default_factory=list)

    def edges(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {name: set() for name in self.modules}
        for imp in self.imports:
            out[imp.source].add(imp.target)
        return out

    def deferred_share(self) -> float:
        return sum(i.deferred for i in self.imports) / max(1, len(self.imports))

    def cycles(self) -> list[list[str]]:
        """Strongly connected components of more than one module, largest first."""
        edges, index, low, stack, on, found = self.edges(), {}, {}, [], set(), []
        counter = [0]

        def visit(v: str) -> None:
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in edges[v]:
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))

        sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
        for v in edges:
            if v not in index:
                visit(v)
        return sorted(found, key=len, reverse=True)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def build(package: Path = PACKAGE) -> Graph:
    modules = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph = Graph(modules)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        _walk(graph, name, pkg, tree, deferred=False)
    return graph


def _targets(node: ast.Import | ast.ImportFrom, pkg: str, modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    base = node.module or ""
    if node.level:
        parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    out = []
    for alias in node.names:
        full = f"{base}.{alias.name}"
        target = full if full in modules else base
        if target in modules:
            out.append(target)
    return out


def _walk(graph: Graph, name: str, pkg: str, node: ast.AST, *, deferred: bool) -> None:
    for child in ast.iter_child_nodes(node):
        if _type_checking(child):
            continue
        inner = deferred or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if isinstance(child, ast.Import | ast.ImportFrom):
            for target in _targets(child, pkg, graph.modules):
                if target != name:
                    graph.imports.append(Import(name, target, child.lineno, deferred))
        _walk(graph, name, pkg, child, deferred=inner)


def main() -> None:
    graph = build()
    deferred = sum(i.deferred for i in graph.imports)
    print(f"internal imports {len(graph.imports)}, deferred into function bodies {deferred} "
          f"({100 * graph.deferred_share():.1f} %)")  # fmt: skip
    cycles = graph.cycles()
    print("cycles (sizes):", [len(c) for c in cycles])
    for cycle in cycles:
        print(f"  {len(cycle)}: " + ", ".join(m.removeprefix("harness_cli.") for m in cycle))


if __name__ == "__main__":
    main()
