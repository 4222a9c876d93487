"""The decision prompt's v2 style (each option with its own minutes) and where the
style is chosen: the training config, the shipped adapter's record, the policy."""

from __future__ import annotations

import json

import pytest
from test_oracle_decision_prompt import observations

from evgrid_core import EVGridEnv
from evgrid_core.actions import Route
from evgrid_core.candidates import candidates
from oracle.policy import shipped_prompt_style
from oracle.prompt import PROMPT_STYLES, decision_prompt


def test_the_first_evening_peak_request_reads_as_expected_in_v2() -> None:
    # the v1 probe's state: S9's SLOW charges in 170 min after a 9 min drive
    obs = EVGridEnv().reset(seed=0, scenario="evening_peak")
    assert decision_prompt(obs, style="v2").messages[1]["content"] == (
        "17:00 pending 3\n"
        "E1 cab SoC 11->81% 18kWh gives up 28m\n"
        "S9 9m feeder 84%\n"
        "A SLOW plug 9 done 179 4 free\n"
        "B FAST plug 9 done 49 4 free\n"
        "C ULTRA plug 9 done 49 1 free\n"
        "S8 14m feeder 84%\n"
        "D SLOW plug 14 done 183 4 free\n"
        "E FAST plug 14 done 53 2 free\n"
        "S5 20m feeder 84%\n"
        "F SLOW plug 20 done 190 4 free\n"
        "G FAST plug 20 done 60 4 free\n"
        "H ULTRA plug 20 done 60 2 free\n"
        "I DEFER 5m\n"
        "J DEFER 10m"
    )


@pytest.mark.parametrize("scenario", ["festival_surge", "feeder_fault"])
def test_v2_lists_v1s_options_each_with_the_candidates_minutes(scenario) -> None:
    queued = 0
    for _env, obs in observations(scenario, seed=2, limit=120):
        v1, v2 = decision_prompt(obs), decision_prompt(obs, style="v2")
        assert (v2.lines, v2.letters) == (v1.lines, v1.letters)
        if not v2.lines:
            continue
        c = candidates(obs)
        text = v2.messages[1]["content"].splitlines()
        for letter, line in zip(v2.letters, v2.lines, strict=True):
            (row,) = [t for t in text if t.startswith(f"{letter} ")]
            i = c.lines.index(line)
            if not isinstance(c.actions[i], Route):
                assert row == f"{letter} DEFER {c.actions[i].minutes}m"
                continue
            words = row.split()
            plug = min(c.column("travel_min")[i] + c.column("wait_inbound_min")[i], 999)
            done = min(plug + c.column("charge_min")[i], 999)
            assert words[1] == c.actions[i].kind.name
            assert words[2:6] == ["plug", f"{plug:.0f}", "done", f"{done:.0f}"]
            queued += float(words[3]) > c.column("travel_min")[i] + 0.5
    assert queued > 0  # some options wait behind a queue: the times differ from drives


def test_an_unknown_prompt_style_is_refused() -> None:
    obs = EVGridEnv().reset(seed=0, scenario="evening_peak")
    assert PROMPT_STYLES == ("v1", "v2", "v1+on_time", "v2+on_time",
                             "v1+on_time+spare", "v2+on_time+spare")  # fmt: skip
    with pytest.raises(ValueError, match="prompt style is one of"):
        decision_prompt(obs, style="v3")
    with pytest.raises(ValueError, match="prompt style is one of"):
        decision_prompt(obs, style="v1+late")


def test_the_shipped_style_is_read_from_the_record_beside_the_adapter(
    tmp_path,
) -> None:
    record = tmp_path / "oracle.json"
    assert shipped_prompt_style(record) == "v1"  # none: the first Oracle's
    record.write_text(json.dumps({"prompt_style": "v2"}))
    assert shipped_prompt_style(record) == "v2"
    record.write_text(json.dumps({"prompt_style": "v9"}))
    with pytest.raises(ValueError, match="v9"):
        shipped_prompt_style(record)


def test_the_training_config_checks_the_prompt_style() -> None:
    from training.oracle_sft import config_with_overrides

    cfg = config_with_overrides("cpu-smollm2-v2", None)
    assert cfg.data.prompt_style == "v2"
    with pytest.raises(ValueError, match="prompt_style"):
        config_with_overrides("cpu-smollm2-v2", ['data.prompt_style="v3"'])
    assert config_with_overrides("cpu-smollm2", None).data.serve_prompt_style == (
        "v1+on_time+spare"
    )
    with pytest.raises(ValueError, match="serve_prompt_style"):  # not a style
        config_with_overrides("cpu-smollm2", ['data.serve_prompt_style="v1+late"'])
    with pytest.raises(ValueError, match="only the listing may differ"):
        config_with_overrides("cpu-smollm2", ['data.serve_prompt_style="v2+on_time"'])


def test_the_policy_asks_in_the_shipped_style_unless_told(
    tmp_path, monkeypatch
) -> None:
    from test_oracle_policy import FakeLlama

    import oracle.policy
    from oracle.policy import GGUFPolicy

    obs = EVGridEnv().reset(seed=0, scenario="evening_peak")
    monkeypatch.setattr(oracle.policy, "SHIPPED_PROMPT", tmp_path / "oracle.json")
    (tmp_path / "oracle.json").write_text(json.dumps({"prompt_style": "v2"}))
    for told, style in ((None, "v2"), ("v1", "v1"), ("v2", "v2"), ("v1+on_time",) * 2):
        fake = FakeLlama("B")
        policy = GGUFPolicy(
            llama=fake, prompt="decision", use_grammar=False, prompt_style=told
        )
        assert policy.prompt_style == style
        p = decision_prompt(obs, style=style)
        assert policy.act(obs) == p.lines[1]
        assert fake.calls[0][0] == p.text
    with pytest.raises(ValueError, match="prompt_style is one of"):
        GGUFPolicy(llama=FakeLlama("B"), prompt="decision", prompt_style="v0")
