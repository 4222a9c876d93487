"""Layering: the core is pure, and every package imports only the layers the table
below allows it. Every import counts, the lazy ones inside functions included."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# --- The table ---------------------------------------------------------------------------
# Each layer (a package, or a top-level script by its module name) and the other
# layers of ours it may import. Front ends (viz, evgrid_web, evgrid_openenv,
# evgrid_gym, main, server) import the core and nothing beside it but the city
# view's shared drawing (evgrid_render), and never one another, save that server.py
# mounts the web page on the OpenEnv app; a policy living above the core
# (oracle) reaches every front end through the core's registry (the
# `evgrid.policies` entry points), never by an import.
ALLOWED: dict[str, frozenset[str]] = {
    "evgrid_core": frozenset(),  # the pure simulator everything stands on
    # Libraries on the core.
    "evaluation": frozenset({"evgrid_core"}),  # comparisons, the hindsight optimum
    "oracle": frozenset({"evgrid_core"}),  # the LLM policy: a registry plugin
    # Training labels states with the optimum (evaluation) and trains, exports and
    # evaluates the Oracle's own prompt, grammar and runtime (oracle).
    "training": frozenset({"evgrid_core", "evaluation", "oracle"}),
    # The city view's drawing and episode driver, shared by the two front ends that
    # show the city (the desktop window, the web page), which never import each other.
    "evgrid_render": frozenset({"evgrid_core"}),
    # Front ends.
    "viz": frozenset({"evgrid_core", "evgrid_render"}),
    "evgrid_web": frozenset({"evgrid_core", "evgrid_render"}),  # the Space's page
    "evgrid_openenv": frozenset({"evgrid_core"}),
    "evgrid_gym": frozenset({"evgrid_core"}),
    # The AC power-flow reference (pandapower): a grid model registered in the
    # core's registry (the `evgrid.grid_models` entry points), never imported by it.
    "evgrid_ac": frozenset({"evgrid_core"}),
    # Many operators as agents: a PettingZoo env on the gym wrapper's encoding.
    "evgrid_marl": frozenset({"evgrid_core", "evgrid_gym"}),
    # RLlib: PPO on both envs, and the learnt policy `ppo` (a registry plugin).
    # (compare/labels as Ray tasks live beside their jobs, in evaluation, training.)
    "evgrid_rl": frozenset({"evgrid_core", "evgrid_gym", "evgrid_marl"}),
    "main": frozenset({"viz"}),  # main.py: the city view's entry point
    # server.py: the Space's entry point, the OpenEnv server with the page mounted.
    "server": frozenset({"evgrid_openenv", "evgrid_web"}),
    # The console script is the one door to the rest: each `evgrid` command hands
    # its work to the package that owns it (compare/optimum -> evaluation,
    # labels/distill/train -> training, serve -> evgrid_openenv). Nothing imports
    # the CLI back, and it never imports the other front ends (viz) or a plugin.
    # `compare --ray` / `labels --ray` run in evaluation's and training's Ray runners.
    "evgrid_cli": frozenset(
        {"evgrid_core", "evaluation", "training", "evgrid_openenv"}
    ),
}
# Folders with Python that are not a layer: they may import whatever they test or
# measure. Anything else with Python in it must have a row above.
NOT_LAYERED = {
    "tests": "the tests of every layer",
    "bench": "benchmark scripts, one per thing measured",
    "build": "setuptools' copy of the packages when a wheel is built (git-ignored)",
}
# Third-party packages the core must never load (its whole allowance is below).
CORE_FORBIDDEN = ("pygame", "fastapi", "torch", "llama_cpp", "gymnasium", "pandapower")
CORE_THIRD_PARTY = {"numpy", "networkx", "numba"}  # numba: jit.py, optional


# --- The checker -------------------------------------------------------------------------
def imported_modules(path: Path) -> set[str]:
    """The top-level names a file imports: ``import``, ``from ... import`` (not
    relative) and ``importlib.import_module`` / ``__import__`` of a literal."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args:
            f, arg = node.func, node.args[0]
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname in ("import_module", "__import__") and isinstance(
                arg, ast.Constant
            ):
                names.add(str(arg.value).split(".")[0])
    return names


def layer_files(root: Path) -> dict[str, list[Path]]:
    """Every Python file under ``root`` by its layer (top folder, or script name)."""
    out: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0].startswith("."):  # .venv/, .cache/: installed, not ours
            continue
        layer = rel.parts[0] if len(rel.parts) > 1 else path.stem
        out.setdefault(layer, []).append(path)
    return out


def forbidden_arrows(root: Path) -> list[str]:
    """``"<file> imports <layer>"`` for every import the table does not allow."""
    bad = []
    for layer, files in layer_files(root).items():
        if layer in NOT_LAYERED:
            continue
        for path in files:
            others = imported_modules(path) & set(ALLOWED) - {layer}
            for name in sorted(others - ALLOWED.get(layer, frozenset())):
                bad.append(f"{path.relative_to(root)} imports {name}")
    return bad


# --- Tests -------------------------------------------------------------------------------
def test_every_folder_with_python_has_a_row() -> None:
    unlayered = set(layer_files(ROOT)) - set(ALLOWED) - set(NOT_LAYERED)
    assert not unlayered, f"add a row to ALLOWED for {sorted(unlayered)}"


def test_every_import_follows_the_table() -> None:
    assert forbidden_arrows(ROOT) == []


def test_the_checker_finds_forbidden_arrows(tmp_path: Path) -> None:
    """A table test that cannot fail is no test: each of these files breaks it."""
    files = {
        # a front end importing a plugin, lazily, as viz once did
        "viz/controller.py": "def f():\n    import oracle.policy\n",
        # the core importing upwards through importlib
        "evgrid_core/policies.py": "import importlib\nimportlib.import_module('viz.app')\n",
        # an arrow back up: training importing the CLI
        "training/__main__.py": "from evgrid_cli.cmd_train import run\n",
        # front end to front end
        "evgrid_openenv/app.py": "from evgrid_gym import EVGridGymEnv\n",
        "evgrid_web/page.py": "from viz.app import handle_key\n",
        # the shared renderer reaching up into a front end that uses it
        "evgrid_render/view.py": "def f():\n    import evgrid_web\n",
        # allowed: the CLI's command delegating to training; a relative import
        "evgrid_cli/cmd_train.py": "from training.cli import run\nfrom . import main\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert forbidden_arrows(tmp_path) == [
        "evgrid_core/policies.py imports viz",
        "evgrid_openenv/app.py imports evgrid_gym",
        "evgrid_render/view.py imports evgrid_web",
        "evgrid_web/page.py imports viz",
        "training/__main__.py imports evgrid_cli",
        "viz/controller.py imports oracle",
    ]


def test_core_source_imports_only_stdlib_numpy_networkx_numba() -> None:
    for path in (ROOT / "evgrid_core").rglob("*.py"):
        third = {m for m in imported_modules(path) if m not in sys.stdlib_module_names}
        assert third <= CORE_THIRD_PARTY, (path.name, third - CORE_THIRD_PARTY)


def test_importing_the_core_loads_no_front_end_package() -> None:
    """Nothing the core imports at run time pulls in a heavy package or a layer above."""
    watched = (*CORE_FORBIDDEN, "openenv", "trl", "pydantic", "uvicorn", *ALLOWED)
    code = (
        "import sys, evgrid_core, evgrid_core.policies, evgrid_core.rollout;"
        f"print(' '.join(m for m in {watched!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["evgrid_core"]
