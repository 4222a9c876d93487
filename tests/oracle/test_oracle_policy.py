"""GGUFPolicy: the policy protocol, the fallback path, and real GGUF episodes.

Real models: (a) the tiny random-weight Qwen2 with the Qwen2.5 vocabulary over two
full episodes (evening_peak, festival_surge); (b) SmolLM2-135M-Instruct over two full
episodes of the two shortest scenarios (quiet_night, morning_peak) to keep CPU time
modest. With the grammar every decision must be valid in the core.
"""

from __future__ import annotations

import logging

import pytest

from evgrid_core import EVGridEnv, format_action
from evgrid_core.policies import make_policy, policy_names
from oracle.grammar import allowed_actions, max_answer_tokens
from oracle.policy import GGUFPolicy
from oracle.prompt import IM_END, build_prompt

DEBUG_KEYS = {"raw", "source", "latency_ms", "prompt_tokens", "reason", "action"}


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


def test_registered_as_oracle_and_needs_a_model(tmp_path) -> None:
    assert "oracle" in policy_names()
    with pytest.raises(ValueError, match="--model PATH"):
        make_policy("oracle")
    with pytest.raises(ValueError, match="no GGUF model"):
        make_policy("oracle", model_path=str(tmp_path / "missing.gguf"))


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
    assert not res.info["valid"] and "not the request" in res.info["reason"]


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


def run_episode(policy: GGUFPolicy, scenario: str, seed: int) -> list[dict]:
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    policy.reset(seed)
    rows = []
    while not env.done:
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
    return rows


def assert_all_valid_from_grammar(rows: list[dict]) -> None:
    bad = [r for r in rows if not r["valid"] or r["source"] != "grammar"]
    assert bad == [], bad[:3]
    assert all(r["prompt_tokens"] > 200 for r in rows)


@pytest.mark.parametrize("scenario", ["evening_peak", "festival_surge"])
def test_tiny_qwen_under_grammar_is_always_valid(tiny_llama, scenario) -> None:
    policy = GGUFPolicy(llama=tiny_llama, temperature=0.8)
    rows = run_episode(policy, scenario, seed=1)
    assert len(rows) > 100
    assert_all_valid_from_grammar(rows)
    kinds = {r["action"].split()[0] for r in rows}
    assert "ROUTE" in kinds  # it sampled, rather than one fixed answer


@pytest.mark.parametrize("scenario", ["quiet_night", "morning_peak"])
def test_smollm2_under_grammar_is_always_valid(smol_llama, scenario) -> None:
    policy = GGUFPolicy(llama=smol_llama)
    rows = run_episode(policy, scenario, seed=0)
    assert len(rows) >= 30
    assert_all_valid_from_grammar(rows)


@pytest.mark.parametrize("which", ["tiny", "smol"])
def test_without_grammar_validity_matches_the_core(request, which) -> None:
    """Raw validity without the grammar (reported, not required): the policy's own
    check (is the line among the valid actions?) must agree with the core's."""
    llama = request.getfixturevalue(f"{which}_llama")
    policy = GGUFPolicy(llama=llama, use_grammar=False, fallback=None)
    rows = run_episode(policy, "quiet_night", seed=0)
    assert all(r["in_allowed"] == r["valid"] for r in rows)
    rate = sum(r["valid"] for r in rows) / len(rows)
    print(f"\n{which}: {rate:.0%} valid without grammar over {len(rows)} decisions")
