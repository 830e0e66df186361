"""scripts/import_graph.py: finds circles hidden by lazy imports, ignores TYPE_CHECKING ones."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_script():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


import_graph = _load_script()


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    for name, body in {"__init__.py": "", **files}.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return pkg


def test_lazy_import_circle_is_reported_with_exit_1(tmp_path, capsys):
    pkg = _package(tmp_path, {
        "a.py": "from pkg.b import g\n",
        "b.py": "def g():\n    from . import a\n",
        "c.py": "import pkg.a\n",
    })
    assert import_graph.main(["import_graph.py", str(pkg)]) == 1
    out = capsys.readouterr().out
    assert "pkg.a -> pkg.b -> pkg.a" in out
    assert "pkg/b.py:2, lazy" in out and "pkg.c" not in out.split("import cycle")[1]


def test_type_checking_imports_and_package_reexports_are_not_circles(tmp_path, capsys):
    pkg = _package(tmp_path, {
        "__init__.py": "from pkg.a import f\n",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import g\ndef f(): ...\n",
        "b.py": "from pkg.a import f\n",
    })
    assert import_graph.main(["import_graph.py", str(pkg)]) == 0
    assert "no import cycles" in capsys.readouterr().out


def test_policydesk_itself_has_no_import_cycle(capsys):
    # Issue 13: keep the package free of circles (lazy imports included) as it grows.
    assert import_graph.main(["import_graph.py", str(ROOT / "policydesk")]) == 0, capsys.readouterr().out


def test_lower_layers_never_import_web_cli_or_the_pipeline():
    # Issue 13: no back-edge from a lower layer to the layers built on it.
    _, edges = import_graph.build_graph(ROOT / "policydesk")
    lower = ("policydesk.storage", "policydesk.retrievers", "policydesk.postprocessors", "policydesk.versions",
             "policydesk.detectors", "policydesk.synthesis", "policydesk.providers")
    upper = ("policydesk.web", "policydesk.cli", "policydesk.commands", "policydesk.pipeline", "policydesk.evals")
    back = [e for e in edges if e.source.startswith(lower) and e.target.startswith(upper)]
    assert back == []


def test_no_module_cycle_even_through_type_only_imports():
    modules, edges = import_graph.build_graph(ROOT / "policydesk", type_only=True)
    adjacency: dict[str, set[str]] = {}
    for e in edges:
        adjacency.setdefault(e.source, set()).add(e.target)
    assert import_graph.strongly_connected(sorted(modules), adjacency) == []


# The intended direction between the parts of policydesk (docs/design.md, "Layers and imports"):
# a part may import parts of a lower or equal rank. Anything else is a back-edge.
RANK = {"config": 0, "storage": 0, "detectors": 0, "versions": 1, "contract": 1, "reading": 2, "screening": 3,
        "accounts": 3, "providers": 4, "synthesis": 4, "retrievers": 4, "postprocessors": 4, "ingest": 4, "ops": 4,
        "products": 4, "proof": 5, "extensions": 5, "pipeline": 6}  # everything else (web, cli, evals...): 7


def test_parts_import_only_downward():
    _, edges = import_graph.build_graph(ROOT / "policydesk", type_only=True)
    back = sorted(f"{a} -> {b} ({found[0].source})" for (a, b), found in import_graph.part_edges(edges).items()
                  if RANK.get(b.split(".")[1], 7) > RANK.get(a.split(".")[1], 7))
    assert back == []


def test_no_cycle_between_packages():
    # Parts of equal rank may import each other one way only: no package cycle, type-only imports included.
    _, edges = import_graph.build_graph(ROOT / "policydesk", type_only=True)
    adjacency: dict[str, set[str]] = {}
    for a, b in import_graph.part_edges(edges):
        adjacency.setdefault(a, set()).add(b)
    parts = sorted(set(adjacency) | {b for targets in adjacency.values() for b in targets})
    assert import_graph.strongly_connected(parts, adjacency) == []
