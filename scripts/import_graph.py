"""Build the module import graph of a package and report import cycles.

Usage: python scripts/import_graph.py [PACKAGE_DIR]   (default: ./policydesk next to scripts/)

Every .py file is parsed with `ast` (nothing is imported or executed) and every import
statement counts, wherever it sits: module level, inside a function (the lazy imports
that hide a circle at import time), inside try/except. Only imports under
`if TYPE_CHECKING:` are left out, because they never run.

An edge goes to the module actually named: `from a.b import c` points at `a.b.c` when
that is a module of the package, else at `a.b`. The parent packages that Python
initialises on the way (`a`, `a/__init__.py`) are not counted as edges, so a package
`__init__` that re-exports its own submodules is not reported as a circle.

Cycles are reported per strongly connected component: its modules, one shortest cycle
through it, and every import edge inside it with file:line and whether it is lazy.
Exit status 1 when there is any cycle, 0 otherwise.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    path: str
    line: int
    lazy: bool  # inside a function body: runs on call, not on import


def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the package."""
    root = package_dir.parent
    names: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_only: bool = False):
    """(node, lazy) for every import statement; `if TYPE_CHECKING:` bodies only with `type_only`."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, lazy = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, lazy
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_only:
            stack.extend((child, lazy) for child in node.orelse)
            continue
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest module of the package that `name` names (a.b.C -> a.b)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def build_graph(package_dir: Path, type_only: bool = False) -> tuple[dict[str, Path], list[Edge]]:
    """Every import edge between the package's modules; `type_only` adds `if TYPE_CHECKING:` ones."""
    modules = module_names(package_dir)
    root = package_dir.parent
    edges: list[Edge] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        rel = str(path.relative_to(root))
        for node, lazy in _imports(tree, type_only):
            if isinstance(node, ast.Import):
                targets = [_known(alias.name, modules) for alias in node.names]
            else:
                base = _resolve_from(module, is_package, node)
                targets = [_known(f"{base}.{alias.name}", modules) or _known(base, modules)
                           for alias in node.names]
            for target in dict.fromkeys(t for t in targets if t):
                if target != module:
                    edges.append(Edge(module, target, rel, node.lineno, lazy))
    return modules, edges


def part_of(module: str, depth: int = 2) -> str:
    """The top-level part a module belongs to: `policydesk.storage.models` -> `policydesk.storage`;
    a root module is its own part (`policydesk.pipeline`)."""
    return ".".join(module.split(".")[:depth])


def part_edges(edges: list[Edge]) -> dict[tuple[str, str], list[Edge]]:
    """Import edges between parts (packages or root modules), each with the module edges behind it;
    the package root's `__init__` (lazy re-exports) is left out."""
    out: dict[tuple[str, str], list[Edge]] = {}
    for e in edges:
        a, b = part_of(e.source), part_of(e.target)
        if a != b and e.source.count(".") > 0 and a != e.source.split(".")[0]:
            out.setdefault((a, b), []).append(e)
    return out


def strongly_connected(nodes: list[str], adjacency: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(adjacency.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(adjacency.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def shortest_cycle(start: str, members: set[str], adjacency: dict[str, set[str]]) -> list[str]:
    """Breadth-first from `start` back to itself, staying inside the component."""
    queue = deque([[start]])
    seen = {start}
    while queue:
        path = queue.popleft()
        for nxt in sorted(adjacency.get(path[-1], ())):
            if nxt == start:
                return path + [start]
            if nxt in members and nxt not in seen:
                seen.add(nxt)
                queue.append(path + [nxt])
    return [start]


def main(argv: list[str]) -> int:
    package_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "policydesk"
    modules, edges = build_graph(package_dir.resolve())
    adjacency: dict[str, set[str]] = {}
    for e in edges:
        adjacency.setdefault(e.source, set()).add(e.target)
    components = strongly_connected(sorted(modules), adjacency)
    lazy = sum(e.lazy for e in edges)
    print(f"{package_dir.name}: {len(modules)} modules, {len(edges)} import edges ({lazy} lazy)")
    if not components:
        print("no import cycles")
        return 0
    print(f"{len(components)} import cycle(s):")
    for members in components:
        inside = set(members)
        print(f"\n- {len(members)} modules: {', '.join(members)}")
        print("  cycle: " + " -> ".join(shortest_cycle(members[0], inside, adjacency)))
        for e in sorted(edges, key=lambda e: (e.source, e.target, e.line)):
            if e.source in inside and e.target in inside:
                print(f"  {e.source} -> {e.target}  ({e.path}:{e.line}{', lazy' if e.lazy else ''})")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
