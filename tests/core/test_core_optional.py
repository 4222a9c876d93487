"""Optional packages: one error type (an ImportError) naming the extra, one wording."""

import subprocess
import sys

import pytest

from evgrid_core.optional import DependencyNotInstalled, install_hint, require


def test_require_imports_what_is_there() -> None:
    import json

    assert require("json", "anything", "eval") is json


def test_a_missing_package_names_its_feature_package_and_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "lightgbm", None)  # blocked, as if missing
    with pytest.raises(DependencyNotInstalled) as e:
        require("lightgbm", "training distilled", "distill")
    err = e.value
    assert isinstance(err, ImportError)  # ``except ImportError`` still catches it
    assert (err.feature, err.package, err.extra) == (
        "training distilled",
        "lightgbm",
        "distill",
    )
    assert str(err).startswith(
        "training distilled needs lightgbm: pip install 'ev-grid-oracle[distill]'"
    )
    assert "python3 -m pip install -e '.[distill]'" in str(err)
    assert "import failed:" in str(err)  # the import's own reason kept


def test_a_note_replaces_the_import_reason(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(DependencyNotInstalled, match="; build it portable") as e:
        require("llama_cpp", "the Oracle", "oracle", package="llama-cpp-python",
                note="build it portable")  # fmt: skip
    assert e.value.package == "llama-cpp-python" and e.value.name == "llama-cpp-python"
    assert install_hint("x", "y", "z").startswith("x needs y: pip install")


def test_the_cli_says_it_in_one_line_without_a_traceback() -> None:
    code = (
        "import sys; sys.modules['highspy'] = None\n"
        "from evgrid_cli.main import main\n"
        "raise SystemExit(main(['optimum', '--scenario', 'heatwave', '--seed', '0']))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 2
    assert "evgrid optimum: error: the hindsight optimum needs highspy: pip install " \
           "'ev-grid-oracle[eval]'" in res.stderr  # fmt: skip
    assert "Traceback" not in res.stderr


def test_every_extra_a_require_names_is_one_pyproject_has() -> None:
    import ast
    import tomllib
    from pathlib import Path

    root = Path(__file__).parents[2]
    extras = set(tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]) | {""}  # fmt: skip
    named = []
    for f in root.glob("*/**/*.py"):
        if {".venv", "tests", ".cache", "build"} & set(f.relative_to(root).parts):
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "require":
                extra = node.args[2] if len(node.args) > 2 else None
                assert isinstance(extra, ast.Constant), f"{f}: extra not a literal"
                named.append((f.name, extra.value))
    assert len(named) >= 15  # it found the call sites
    assert {e for _, e in named} <= extras, sorted(named)
