"""GGUFPolicy: the policy protocol, the fallback path, and real GGUF decisions.

Real models, decoded under the per-step grammar, every decision checked by the core:
(a) the tiny random-weight Qwen2 with the Qwen2.5 vocabulary over full episodes of
quiet_night and morning_peak; (b) SmolLM2-135M-Instruct over a full quiet_night
episode and the first 10 decisions of morning_peak, with 4 stations in the prompt
(CPU time: a SmolLM2 decision costs 1-4 s on 2 shared cores).
`bench/oracle_latency.py --full` runs both models over whole episodes.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import oracle.policy
from evgrid_core import EVGridEnv, format_action
from evgrid_core.policies import make_policy, policy_names
from oracle.grammar import allowed_actions, max_answer_tokens
from oracle.policy import GGUFPolicy, shipped_prompt_style
from oracle.prompt import DECISION_STATIONS, IM_END, build_prompt, decision_prompt

DEBUG_KEYS = {
    "raw",
    "line",
    "source",
    "latency_ms",
    "prompt_tokens",
    "reason",
    "action",
}


class FakeLlama:
    """Stands in for llama_cpp.Llama: answers a fixed line (or raises) and records calls."""

    def __init__(self, answer: str | None = None, error: Exception | None = None):
        self.answer, self.error, self.calls = answer, error, []

    def create_completion(self, prompt: str, **kwargs):
        self.calls.append((prompt, kwargs))
        if self.error is not None:
            raise self.error
        text = self.answer(prompt) if callable(self.answer) else self.answer
        return {"choices": [{"text": text}], "usage": {"prompt_tokens": 321}}


def first_obs(scenario: str = "evening_peak", seed: int = 0):
    env = EVGridEnv()
    return env, env.reset(seed=seed, scenario=scenario)


def greedy_line(obs) -> str:
    p = make_policy("greedy_eta")
    p.reset(0)
    return format_action(p.act(obs))


# --- Protocol and registry ---------------------------------------------------------------


def test_registered_as_oracle_and_says_what_is_missing(tmp_path, monkeypatch) -> None:
    assert "oracle" in policy_names()
    # no --model: the shipped adapter over the runtime base
    monkeypatch.setattr(oracle.policy, "SHIPPED_ADAPTER", tmp_path / "gone.gguf")
    with pytest.raises(ValueError, match="adapter .*gone.gguf is missing"):
        make_policy("oracle")
    with pytest.raises(ValueError, match="no GGUF model"):
        make_policy("oracle", model_path=str(tmp_path / "missing.gguf"))


def test_the_decision_prompt_is_asked_and_a_letter_answers_it() -> None:
    env, obs = first_obs()
    p = decision_prompt(obs, style=shipped_prompt_style())  # the shipped adapter's
    fake = FakeLlama(" B")  # the second option, as a model may write it
    policy = GGUFPolicy(llama=fake, prompt="decision", use_grammar=False)
    assert policy.max_stations == DECISION_STATIONS
    assert policy.act(obs) == p.lines[1]
    prompt, kwargs = fake.calls[0]
    assert prompt == p.text
    assert (
        kwargs["max_tokens"] == 1
    )  # a letter is one token (test_oracle_decision_prompt)
    assert policy.last_debug["raw"] == " B" and policy.last_debug["source"] == "model"
    assert env.step(p.lines[1]).info["valid"]
    with pytest.raises(ValueError, match="prompt is one of"):
        GGUFPolicy(llama=fake, prompt="essay")


@pytest.mark.parametrize("answer", ["Z", "", "ROUTE E1 S9 FAST junk", "b"])
def test_a_letter_that_names_no_option_falls_back(answer: str, caplog) -> None:
    _env, obs = first_obs()
    policy = GGUFPolicy(llama=FakeLlama(answer), prompt="decision", use_grammar=False)
    with caplog.at_level(logging.WARNING, logger="oracle.policy"):
        assert policy.act(obs) == greedy_line(obs)
    assert policy.last_debug["source"] == "fallback"
    assert "not valid now" in policy.last_debug["reason"]


def test_the_decision_grammar_allows_exactly_the_listed_letters() -> None:
    pytest.importorskip("llama_cpp")
    _env, obs = first_obs()
    p = decision_prompt(obs)
    fake = FakeLlama("C")
    GGUFPolicy(llama=fake, prompt="decision").act(obs)
    grammar = fake.calls[0][1]["grammar"]
    assert grammar is not None
    from gbnf_ref import language, parse

    from oracle.grammar import lines_grammar

    assert language(parse(lines_grammar(p.letters))) == set(p.letters)


def test_a_valid_model_answer_is_used_and_the_request_is_well_formed() -> None:
    env, obs = first_obs()
    line = allowed_actions(obs)[0]
    fake = FakeLlama(line + "\n")
    policy = GGUFPolicy(llama=fake, use_grammar=False)
    policy.reset(3)
    assert policy.act(obs) == line
    prompt, kwargs = fake.calls[0]
    assert prompt == build_prompt(obs)
    assert kwargs["max_tokens"] == max_answer_tokens()
    assert IM_END in kwargs["stop"] and kwargs["grammar"] is None
    dbg = policy.last_debug
    assert set(dbg) == DEBUG_KEYS
    assert (dbg["source"], dbg["raw"], dbg["prompt_tokens"]) == (
        "model",
        line + "\n",
        321,
    )
    assert env.step(policy.act(obs)).info["valid"]


@pytest.mark.parametrize(
    ("answer", "error", "reason"),
    [
        ("I would send it to Koramangala.", None, "not valid now"),  # prose
        ("ROUTE E999 S1 FAST", None, "not valid now"),  # parses, wrong EV
        ("", None, "not valid now"),  # nothing
        (None, RuntimeError("llama_decode returned -3"), "model error: RuntimeError"),
    ],
)
def test_a_failing_model_falls_back_to_the_named_heuristic(
    answer, error, reason, caplog
) -> None:
    env, obs = first_obs()
    policy = GGUFPolicy(llama=FakeLlama(answer, error), use_grammar=False)
    policy.reset(0)
    with caplog.at_level(logging.WARNING, logger="oracle.policy"):
        action = policy.act(obs)
    assert action == greedy_line(obs)
    assert policy.last_debug["source"] == "fallback"
    assert reason in policy.last_debug["reason"]
    assert "greedy_eta decides E1 instead" in caplog.text
    assert policy.fallbacks == 1
    assert env.step(action).info["valid"]


def test_without_a_fallback_the_raw_line_is_answered_and_judged_by_the_core() -> None:
    env, obs = first_obs()
    policy = GGUFPolicy(llama=FakeLlama("ROUTE E999 S1 FAST"), fallback=None)
    policy.use_grammar = False
    assert policy.act(obs) == "ROUTE E999 S1 FAST"
    res = env.step("ROUTE E999 S1 FAST")
    assert not res.info["valid"] and "E999" in res.info["reason"]


def test_latency_is_recorded_per_decision() -> None:
    env, obs = first_obs()
    policy = GGUFPolicy(llama=FakeLlama(lambda p: allowed_actions(obs)[0]))
    policy.use_grammar = False
    for _ in range(5):
        policy.act(obs)
    s = policy.latency_summary()
    assert s["decisions"] == 5 == len(policy.latencies_ms)
    assert 0 < s["p50_ms"] <= s["p95_ms"]
    assert s["fallbacks"] == 0


# --- Real GGUF models over full episodes ----------------------------------------------------


def run_episode(
    policy: GGUFPolicy, scenario: str, seed: int, cap: int | None = None
) -> list[dict]:
    """Decide until the episode ends (or ``cap`` decisions); one row per decision."""
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    policy.reset(seed)
    rows = []
    while not env.done and (cap is None or len(rows) < cap):
        allowed = set(allowed_actions(obs))
        action = policy.act(obs)
        res = env.step(action)
        rows.append(
            {
                **policy.last_debug,
                "valid": res.info["valid"],
                "reason_core": res.info["reason"],
                "in_allowed": action in allowed,
            }
        )
        obs = env.observation()
    if cap is None:
        assert env.done  # a full episode
    return rows


def assert_all_valid_from_grammar(rows: list[dict]) -> None:
    bad = [r for r in rows if not r["valid"] or r["source"] != "grammar"]
    assert bad == [], bad[:3]
    assert all(r["prompt_tokens"] > 150 for r in rows)


@pytest.mark.parametrize(
    ("scenario", "decisions"), [("quiet_night", 32), ("morning_peak", 96)]
)
def test_tiny_qwen_under_grammar_is_always_valid(
    tiny_llama, scenario, decisions
) -> None:
    policy = GGUFPolicy(llama=tiny_llama, temperature=0.8)
    rows = run_episode(policy, scenario, seed=0)
    assert len(rows) >= decisions  # the whole episode (random defers add steps)
    assert_all_valid_from_grammar(rows)
    kinds = {r["action"].split()[0] for r in rows}
    assert "ROUTE" in kinds  # it sampled, rather than one fixed answer


@pytest.mark.parametrize(
    ("scenario", "cap"), [("quiet_night", None), ("morning_peak", 10)]
)
def test_smollm2_under_grammar_is_always_valid(smol_llama, scenario, cap) -> None:
    policy = GGUFPolicy(llama=smol_llama, max_stations=4)
    rows = run_episode(policy, scenario, seed=0, cap=cap)
    assert len(rows) >= (32 if cap is None else cap)
    assert_all_valid_from_grammar(rows)


@pytest.mark.parametrize(("which", "cap"), [("tiny", None), ("smol", 6)])
def test_without_grammar_validity_matches_the_core(request, which, cap) -> None:
    """Raw validity without the grammar (reported, not required): the policy's own
    check (is the line among the valid actions?) must agree with the core's."""
    llama = request.getfixturevalue(f"{which}_llama")
    policy = GGUFPolicy(llama=llama, use_grammar=False, fallback=None, max_stations=4)
    rows = run_episode(policy, "quiet_night", seed=0, cap=cap)
    assert all(r["in_allowed"] == r["valid"] for r in rows)
    rate = sum(r["valid"] for r in rows) / len(rows)
    print(f"\n{which}: {rate:.0%} valid without grammar over {len(rows)} decisions")


# --- The shipped Oracle, as users run it ----------------------------------------------------


@pytest.fixture(scope="module")
def shipped_policy(llama_cpp, smol_gguf):
    if not oracle.policy.SHIPPED_ADAPTER.is_file():
        pytest.skip(f"{oracle.policy.SHIPPED_ADAPTER} is not there")
    return GGUFPolicy(threads=1)


@pytest.mark.slow
def test_the_shipped_oracle_decides_with_its_adapter_and_grammar(
    shipped_policy,
) -> None:
    """No --model: SmolLM2 with the LoRA adapter folded in (Q8_0), the decision
    prompt, the grammar over its letters; every answer is the model's own and valid
    (a quiet_night episode: 19 requests on held-out seed 900000, none deferred)."""
    policy = shipped_policy
    assert policy.prompt == "decision" and policy.lora_path is None
    assert "oracle-smollm2-" in policy.model_path
    assert policy.model_path.endswith("-q8_0.gguf")
    rows = run_episode(policy, "quiet_night", seed=900_000)
    assert len(rows) >= 19
    bad = [r for r in rows if not r["valid"] or r["source"] != "grammar"]
    assert bad == [], bad[:3]
    assert all(100 < r["prompt_tokens"] <= 250 for r in rows)


@pytest.mark.slow
def test_the_shipped_oracle_keeps_the_policy_contract(shipped_policy) -> None:
    """``check_policy`` on the Oracle as shipped: valid, deterministic, nothing
    carried between episodes (6 decisions of each play, two scenarios)."""
    from evgrid_core import check_policy

    checked = check_policy(
        shipped_policy, scenarios=["evening_peak", "feeder_fault"], decisions=6
    )
    assert checked == {"evening_peak": 6, "feeder_fault": 6}


@pytest.mark.slow
def test_an_adapter_is_tried_as_the_shipped_oracle_is(
    llama_cpp, smol_gguf, tmp_path
) -> None:
    """``adapter=`` (``evgrid compare --adapter``): a LoRA GGUF folded into the
    package's model beside the adapter, asked with the decision prompt; the shipped
    Oracle's own model is left where it is. A copy of the shipped adapter answers as
    the shipped Oracle does."""
    if not oracle.policy.SHIPPED_ADAPTER.is_file():
        pytest.skip(f"{oracle.policy.SHIPPED_ADAPTER} is not there")
    shipped_model = oracle.policy.shipped_oracle()
    copy = tmp_path / "tried.gguf"
    copy.write_bytes(oracle.policy.SHIPPED_ADAPTER.read_bytes())
    tried = GGUFPolicy(adapter=copy, threads=1, prompt_style="v1+on_time+spare")
    assert tried.prompt == "decision" and tried.prompt_style == "v1+on_time+spare"
    assert Path(tried.model_path).parent == tmp_path
    assert shipped_model.is_file()  # not removed by the other adapter's model
    shipped = GGUFPolicy(threads=1, prompt_style="v1+on_time+spare")
    a = run_episode(tried, "quiet_night", seed=900_001)
    b = run_episode(shipped, "quiet_night", seed=900_001)
    assert [r["action"] for r in a] == [r["action"] for r in b]
    with pytest.raises(ValueError, match="alone"):
        GGUFPolicy(adapter=copy, model_path=smol_gguf)
