"""Layering: the core is pure; only main.py imports viz."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRONT_END = (
    "pygame",
    "fastapi",
    "torch",
    "llama_cpp",
    "gymnasium",
    "openenv",
    "trl",
    "pydantic",
    "uvicorn",
)


def test_importing_the_core_loads_no_front_end_package() -> None:
    code = (
        "import sys, evgrid_core, evgrid_core.policies, evgrid_core.rollout;"
        f"print(' '.join(m for m in {FRONT_END!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == ""


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_source_imports_only_stdlib_numpy_networkx() -> None:
    allowed_third_party = {"numpy", "networkx"}
    for path in (ROOT / "evgrid_core").rglob("*.py"):
        if path.name == "gym_env.py":  # the optional wrapper, imported explicitly
            continue
        third = {m for m in _imports(path) if m not in sys.stdlib_module_names}
        assert third <= allowed_third_party, (path.name, third - allowed_third_party)


def test_nothing_but_main_imports_viz() -> None:
    """Only main.py (and the viewer's own tests and benchmark scripts) import viz."""
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if (
            rel.parts[0] in ("viz", "tests", "bench", "build")
            or rel.parts[0].startswith(".")  # .venv/, .cache/: installed, not ours
            or rel.name == "main.py"
        ):
            continue
        assert "viz" not in _imports(path), f"{rel} imports viz"


def test_core_imports_no_upper_layer() -> None:
    upper = {
        "viz",
        "oracle",
        "training",
        "evaluation",
        "server",
        "evgrid_cli",
        "evgrid_openenv",
    }
    for path in (ROOT / "evgrid_core").rglob("*.py"):
        assert not (_imports(path) & upper), path.name
