"""The Colab notebook is valid JSON, runs only what the README documents, and its
no-GPU cells work here."""

from __future__ import annotations

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


def cells() -> list[dict]:
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4
    return nb["cells"]


def shell_commands(cell: dict) -> list[str]:
    """The code cell's shell lines (``!cmd``), without the ``!``."""
    if cell["cell_type"] != "code":
        return []
    src = "".join(cell["source"])
    return [ln[1:].strip() for ln in src.splitlines() if ln.startswith("!")]


def readme_train_section() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- section: train -->(.*)<!-- /section: train -->", text, re.S)
    assert m, "README has no train section"
    return m.group(1)


def test_notebook_is_valid_and_has_the_colab_steps():
    cs = cells()
    assert all(c["cell_type"] in ("code", "markdown") for c in cs)
    commands = [cmd for c in cs for cmd in shell_commands(c)]
    joined = "\n".join(commands)
    assert "evgrid train --config colab-t4-qwen3b" in joined  # trains the preset
    assert "evgrid compare" in joined and "--policies oracle" in joined  # evaluates
    assert "llama-cpp-python==0.3.36" in joined  # can export and load the GGUF


def test_every_notebook_command_is_documented_in_the_readme():
    readme = readme_train_section()
    for c in cells():
        for cmd in shell_commands(c):
            if "{REPO}" in cmd:  # the clone names the user's own fork
                continue
            assert cmd in readme, f"notebook runs an undocumented command: {cmd}"


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
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "preset colab-t4-qwen3b" in proc.stdout
