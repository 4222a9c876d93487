"""``evgrid train``: the shipped recipe's chain (labels -> distill -> sft -> grpo -> ship)
on the cpu-chain-smoke preset (the tiny random Qwen2, a few optimum solves at node
limit 0): every stage hands over to the next, a rerun skips what is done, and the
shipped GGUF is a LoRA adapter llama.cpp's reader opens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evgrid_cli.main import main as evgrid
from training.chain import grpo_verdict

pytest.importorskip("trl", reason="needs the train extra (scripts/setup.sh test)")
pytest.importorskip("gguf", reason="needs gguf (scripts/setup.d/40-oracle.sh)")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("chain")
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--out", str(out)]) == 0
    return out


def test_every_stage_leaves_its_output(run: Path) -> None:
    record = json.loads((run / "chain.json").read_text())["stages"]
    assert list(record) == ["labels", "distill", "sft", "grpo", "ship"]
    episodes = (run / "labels" / "episodes.jsonl").read_text().splitlines()
    assert record["labels"]["solved_now"] == len(episodes) == 3  # seeds 0-1 and 2
    teacher = json.loads((run / "distilled-teacher.json").read_text())
    assert teacher["meta"]["labels_sha256"] and record["distill"]["refit"]
    assert (run / "adapter" / "adapter_config.json").is_file()
    assert record["sft"]["steps"] == 3
    evals = record["grpo"]["evals"]
    assert [e["step"] for e in evals] == [0, 2]  # held out before and after
    assert "reward" in (run / "grpo" / "logs" / "grpo.csv").read_text().splitlines()[0]
    assert Path(record["ship"]["gguf"]) == run / "ship" / "oracle-smollm2-lora.gguf"
    assert "## GRPO" in (run / "ship" / "TRAINING.md").read_text()


def test_the_shipped_gguf_is_a_lora_adapter(run: Path) -> None:
    from gguf import GGUFReader

    reader = GGUFReader(run / "ship" / "oracle-smollm2-lora.gguf")
    names = [t.name for t in reader.tensors]
    assert names and all(n.endswith((".lora_a", ".lora_b")) for n in names)
    assert json.loads((run / "ship" / "oracle.json").read_text())["prompt_style"]


def test_a_rerun_skips_every_finished_stage(run: Path, capsys) -> None:
    gguf = (run / "ship" / "oracle-smollm2-lora.gguf").read_bytes()
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert "fits these labels already" in err and "sft: finished already" in err
    assert "grpo: finished already" in err
    record = json.loads((run / "chain.json").read_text())["stages"]
    assert record["labels"]["solved_now"] == 0 and not record["distill"]["refit"]
    assert (run / "ship" / "oracle-smollm2-lora.gguf").read_bytes() == gguf


def test_a_rerun_of_one_stage_keeps_the_others_in_the_record(run: Path) -> None:
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--out", str(run),
                   "--stages", "ship"]) == 0  # fmt: skip
    record = json.loads((run / "chain.json").read_text())["stages"]
    assert list(record) == ["labels", "distill", "sft", "grpo", "ship"]
    assert record["sft"]["steps"] == 3


def test_a_missing_converter_stops_the_chain_before_any_stage(
    tmp_path, monkeypatch, capsys
) -> None:
    import oracle.gguf_export

    def missing() -> Path:
        raise FileNotFoundError("llama.cpp's converter is missing")

    monkeypatch.setattr(oracle.gguf_export, "converter_dir", missing)
    out = tmp_path / "none"
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "ship stage cannot run: llama.cpp's converter is missing" in err
    assert "[1/5]" not in err and not out.exists()
    # without ship, the chain does not need it
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--out", str(out),
                   "--stages", "distill"]) == 2  # fmt: skip
    assert "run labels" in capsys.readouterr().err


def test_a_stage_without_its_input_says_which_to_run(tmp_path, capsys) -> None:
    out = str(tmp_path / "empty")
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--out", out,
                   "--stages", "ship"]) == 2  # fmt: skip
    assert "run the sft stage" in capsys.readouterr().err
    assert evgrid(["train", "--config", "cpu-chain-smoke", "--out", out,
                   "--stages", "distill"]) == 2  # fmt: skip
    assert "run labels" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("last_gain", "ci95", "ships", "why"),
    [
        (0.30, 0.10, True, "grew by 0.3, more than its interval"),
        (0.05, 0.10, False, "grew by 0.05: inside its interval"),
        (-0.20, 0.05, False, "got worse"),
    ],
)
def test_grpo_ships_only_when_its_held_out_gain_grew_past_its_interval(
    last_gain, ci95, ships, why
) -> None:
    evals = [{"step": 0, "gain": 0.0, "ci95": 0.1, "kl_letters": 0.0},
             {"step": 80, "gain": last_gain, "ci95": ci95, "kl_letters": 0.2}]  # fmt: skip
    won, text = grpo_verdict(evals)
    assert won is ships, why
    assert ("GRPO's adapter ships" in text) is ships
