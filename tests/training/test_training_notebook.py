"""The Colab notebook is a valid nbformat 4 notebook that follows the shipped recipe
(optimum labels -> SFT with ``training.oracle_sft`` -> the old-prompt GRPO, marked and
off -> GGUF -> ``evgrid compare``), runs only documented commands, its Python cells
compile, and its no-GPU cells work here."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "training" / "train_grpo.ipynb"
PRESET = "colab-t4-qwen1.5b"


def notebook() -> dict:
    return json.loads(NOTEBOOK.read_text())


def cells() -> list[dict]:
    nb = notebook()
    assert nb["nbformat"] == 4
    return nb["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def shell_commands(cell: dict) -> list[str]:
    """The code cell's shell lines (``!cmd``, indented too), without the ``!``."""
    if cell["cell_type"] != "code":
        return []
    lines = (ln.strip() for ln in source(cell).splitlines())
    return [ln[1:].strip() for ln in lines if ln.startswith("!")]


def section(path: Path, name: str) -> str:
    text = path.read_text()
    m = re.search(rf"<!-- section: {name} -->(.*)<!-- /section: {name} -->", text, re.S)
    assert m, f"{path.name} has no {name} section"
    return m.group(1)


def guide_training_section() -> str:
    text = (ROOT / "docs" / "guide.md").read_text()
    m = re.search(r"\n## Training the Oracle\n(.*?)\n## ", text, re.S)
    assert m, "docs/guide.md has no 'Training the Oracle' section"
    return m.group(1)


def test_notebook_is_valid_nbformat_4():
    nb = notebook()
    assert nb["nbformat"] == 4 and nb["nbformat_minor"] >= 5
    assert nb["metadata"]["colab"]["gpuType"] == "T4"
    ids = [c.get("id") for c in nb["cells"]]
    assert all(ids) and len(set(ids)) == len(ids)  # nbformat 4.5 cell ids
    for c in nb["cells"]:
        assert c["cell_type"] in ("code", "markdown")
        assert isinstance(c["source"], list) and isinstance(c["metadata"], dict)
        if c["cell_type"] == "code":
            assert (
                c["outputs"] == [] and c["execution_count"] is None
            )  # committed clean
    if importlib.util.find_spec("nbformat") is not None:  # the full schema, if there
        import nbformat

        nbformat.validate(nbformat.reads(NOTEBOOK.read_text(), as_version=4))


def test_python_cells_compile():
    """Each code cell is Python once IPython's ``!``/``%`` lines are set aside."""
    for i, c in enumerate(cells()):
        if c["cell_type"] != "code":
            continue
        lines = []
        for ln in source(c).splitlines():
            s = ln.lstrip()
            pad = ln[: len(ln) - len(s)]
            lines.append(pad + "pass" if s.startswith(("!", "%")) else ln)
        compile("\n".join(lines), f"cell {i}", "exec")


def test_notebook_follows_the_recipe_in_order():
    cs = cells()
    sft = f"python3 -m training.oracle_sft --config {PRESET} --labels runs/labels"

    def first(found) -> int:  # noqa: ANN001
        hits = [i for i, c in enumerate(cs) if c["cell_type"] == "code" and found(c)]
        assert hits
        return hits[0]

    def has(needle: str):  # noqa: ANN202
        return lambda c: needle in source(c)

    order = [
        first(has("pip install")),  # install
        first(has("tar xzf training/data/optimum-labels.tgz")),  # labels (committed)
        first(has(sft + " --dry-run")),  # the plan
        first(lambda c: sft in shell_commands(c)),  # SFT
        first(has("RUN_GRPO")),  # RL: GRPO on the letters, off by default
        first(has("convert_lora_to_gguf")),  # the adapter to GGUF
        first(has('"compare --policies oracle_qwen')),  # evgrid compare
    ]
    assert order == sorted(order) and len(set(order)) == len(order), order
    joined = "\n".join(source(c) for c in cs)
    assert "llama-cpp-python==0.3.36" in joined  # can export and run the GGUF
    assert 'GGUFPolicy(prompt="decision"' in joined  # asked as it was trained


def test_the_rl_cell_is_the_chains_grpo_stage_and_off():
    (cell,) = [c for c in cells() if "RUN_GRPO" in source(c)]
    text = source(cell)
    assert "RUN_GRPO = False" in text
    (cmd,) = shell_commands(cell)
    assert cmd.startswith("evgrid train --config colab-t4-qwen1.5b --labels runs/labels "
                          "--stages grpo")  # fmt: skip


def test_every_notebook_command_is_documented():
    """In the README's train section or the guide's training section."""
    docs = section(ROOT / "README.md", "train") + guide_training_section()
    for c in cells():
        for cmd in shell_commands(c):
            if "{REPO}" in cmd:  # the clone names the user's own fork
                continue
            assert cmd in docs, f"notebook runs an undocumented command: {cmd}"


def no_gpu_commands() -> list[str]:
    return [
        cmd
        for c in cells()
        if "no-gpu" in c.get("metadata", {}).get("tags", [])
        for cmd in shell_commands(c)
    ]


def test_some_cells_are_marked_runnable_without_a_gpu():
    assert no_gpu_commands()


@pytest.mark.parametrize("command", no_gpu_commands())
def test_no_gpu_cells_run_here(command):
    argv = shlex.split(command)
    if argv[0] == "evgrid" and shutil.which("evgrid") is None:
        argv = [sys.executable, "-m", "evgrid_cli.main", *argv[1:]]
    if argv[0] == "python3":
        argv[0] = sys.executable
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"preset {PRESET}" in proc.stdout
