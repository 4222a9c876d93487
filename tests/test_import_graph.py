"""No import circles: the graph of every module of ours, the deferred imports inside
functions and those under ``TYPE_CHECKING`` included, has no cycle."""

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".venv", ".cache", "build", "runs", "recordings", ".git", "node_modules"}


def our_modules() -> dict[str, Path]:
    """Dotted name -> file of every Python module in the tree (a package's
    ``__init__`` by the package's name); tests and bench by their path."""
    out = {}
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT)
        if SKIP & set(rel.parts):
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ours that ``name`` imports, wherever the import is written."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        # A bare name in tests/ or bench/: the file beside it (pytest's rootdir
        # puts the test's folder on sys.path), else the tree's module.
        near = f"{package}.{target}" if package else target
        for cand in (target, near):
            if cand in modules and cand != name:
                found.add(cand)
                return

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            for a in node.names:  # ``from pkg import mod`` imports pkg.mod
                sub = f"{base}.{a.name}"
                add(sub if sub in modules else base)
        elif isinstance(node, ast.Call) and node.args:
            f, arg = node.func, node.args[0]
            called = getattr(f, "attr", getattr(f, "id", ""))
            literal = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            if called in ("import_module", "__import__") and literal:
                add(arg.value)
    return found


def import_graph() -> nx.DiGraph:
    modules = our_modules()
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for name, path in modules.items():
        g.add_edges_from((name, t) for t in imports_of(name, path, modules))
    return g


def test_no_module_of_ours_is_in_an_import_circle() -> None:
    g = import_graph()
    assert g.number_of_nodes() > 300 and g.number_of_edges() > 1000  # it saw the tree
    circles = sorted(" -> ".join([*c, c[0]]) for c in nx.simple_cycles(g))
    assert circles == [], "import circles:\n" + "\n".join(circles)


def test_the_graph_sees_deferred_and_type_checking_imports(tmp_path) -> None:
    modules = {"pkg": tmp_path / "pkg/__init__.py", "pkg.a": tmp_path / "pkg/a.py",
               "pkg.b": tmp_path / "pkg/b.py", "pkg.c": tmp_path / "pkg/c.py"}  # fmt: skip
    (tmp_path / "pkg").mkdir()
    modules["pkg"].write_text("")
    modules["pkg.a"].write_text("def f():\n    from .b import x\n")
    modules["pkg.b"].write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
    )
    modules["pkg.c"].write_text("import importlib\nimportlib.import_module('pkg.a')\n")
    edges = {n: imports_of(n, p, modules) for n, p in modules.items()}
    assert edges == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"},
                     "pkg.c": {"pkg.a"}}  # fmt: skip
    g = nx.DiGraph([(a, b) for a, bs in edges.items() for b in bs])
    assert len(list(nx.simple_cycles(g))) == 1


def test_no_private_name_is_imported_from_another_module_of_ours() -> None:
    modules = our_modules()
    found = []
    for name, path in modules.items():
        if name.startswith(("tests", "bench")):  # tests reach in on purpose
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or (
                node.module or "").split(".")[0] in {m.split(".")[0] for m in modules}):  # fmt: skip
                private = [a.name for a in node.names if a.name.startswith("_")]
                found += [f"{name}: from {'.' * node.level}{node.module} import {p}"
                          for p in private if p != "__version__"]  # fmt: skip
    assert found == [], found


def test_no_module_outside_the_tests_and_bench_is_over_450_lines() -> None:
    long = {
        name: n
        for name, path in our_modules().items()
        if not name.startswith(("tests", "bench"))
        and (n := len(path.read_text(encoding="utf-8").splitlines())) > 450
    }
    assert long == {}, f"split these by job: {long}"
