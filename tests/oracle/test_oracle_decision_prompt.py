"""The decision prompt (the trained Oracle's) and the grammar over the letters it lists.

A probe state with a known prompt first, then properties over whole episodes: every
listed line is valid and parses, nearest stations come first, the head never
changes (llama.cpp keeps it cached), each letter names one line, and the grammar
accepts exactly the letters (or lines).
"""

from __future__ import annotations

import numpy as np
import pytest
from gbnf_ref import language, parse

from evgrid_core import EVGridEnv, Invalid, parse_action
from evgrid_core.policies import make_policy
from oracle.grammar import allowed_actions, lines_grammar
from oracle.prompt import (
    DECISION_DEFERS,
    DECISION_STATIONS,
    DECISION_SYSTEM,
    decision_prefix,
    decision_prompt,
)


def observations(scenario: str, seed: int, limit: int | None = None):
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    policy = make_policy("greedy_eta")
    policy.reset(seed)
    n = 0
    while not env.done and (limit is None or n < limit):
        yield env, obs
        env.step(policy.act(obs))
        obs = env.observation()
        n += 1


def test_the_first_evening_peak_request_reads_as_expected() -> None:
    # E1 (a cab, no waiting yet) at 17:00; S9, S8 and S5 are its nearest usable
    # stations; S8 has no ULTRA charger; the two shortest DEFERs are listed.
    obs = EVGridEnv().reset(seed=0, scenario="evening_peak")
    p = decision_prompt(obs)
    assert p.messages[0] == {"role": "system", "content": DECISION_SYSTEM}
    assert p.messages[1]["content"] == (
        "17:00 pending 3\n"
        "E1 cab SoC 11->81% 18kWh gives up 28m\n"
        "charge SLOW 170m FAST 40m ULTRA 40m\n"
        "S9 9m feeder 84%\n"
        "A SLOW 4 free\n"
        "B FAST 4 free\n"
        "C ULTRA 1 free\n"
        "S8 14m feeder 84%\n"
        "D SLOW 4 free\n"
        "E FAST 2 free\n"
        "S5 20m feeder 84%\n"
        "F SLOW 4 free\n"
        "G FAST 4 free\n"
        "H ULTRA 2 free\n"
        "I DEFER 5m\n"
        "J DEFER 10m"
    )
    assert p.lines == (
        "ROUTE E1 S9 SLOW",
        "ROUTE E1 S9 FAST",
        "ROUTE E1 S9 ULTRA",
        "ROUTE E1 S8 SLOW",
        "ROUTE E1 S8 FAST",
        "ROUTE E1 S5 SLOW",
        "ROUTE E1 S5 FAST",
        "ROUTE E1 S5 ULTRA",
        "DEFER E1 5",
        "DEFER E1 10",
    )
    assert p.letters == tuple("ABCDEFGHIJ")
    assert p.text.startswith(decision_prefix())
    assert p.text.endswith("<|im_start|>assistant\n")


def test_an_answer_names_its_line_and_a_line_its_letter() -> None:
    p = decision_prompt(EVGridEnv().reset(seed=0, scenario="evening_peak"))
    assert p.line("B") == "ROUTE E1 S9 FAST"
    assert p.line(" J\n") == "DEFER E1 10"  # as a model writes it
    for bad in ("K", "b", "", "AB", "ROUTE E1 S9 FAST"):
        assert p.line(bad) is None
    assert p.letter("ROUTE E1 S5 ULTRA") == "H"
    assert p.letter("DEFER E1 15") is None  # valid, but not listed
    assert all(p.line(p.letter(line)) == line for line in p.lines)


def test_queued_and_coming_evs_and_their_wait_are_shown() -> None:
    # late in a busy festival evening some kinds have queues and EVs on the way
    seen = {"queued": 0, "coming": 0, "wait": 0}
    for _env, obs in observations("festival_surge", seed=2, limit=120):
        text = decision_prompt(obs).messages[1]["content"]
        for word in seen:
            seen[word] += f" {word}" in text
    assert all(n > 0 for n in seen.values()), seen


def test_one_station_lists_only_the_nearest() -> None:
    obs = EVGridEnv().reset(seed=0, scenario="quiet_night")
    p = decision_prompt(obs, max_stations=1)
    routes = [line for line in p.lines if line.startswith("ROUTE")]
    assert routes == ["ROUTE E1 S14 SLOW"]  # a 3-wheeler: AC only
    assert "\nS14 5m " in p.messages[1]["content"]


@pytest.mark.parametrize("scenario", ["evening_peak", "feeder_fault", "heatwave"])
def test_listed_lines_are_valid_nearest_first_and_the_head_never_changes(
    scenario: str,
) -> None:
    head = decision_prefix()
    for env, obs in observations(scenario, seed=3, limit=40):
        p = decision_prompt(obs)
        assert p.text.startswith(head)
        allowed = set(allowed_actions(obs))
        if not p.lines:  # e.g. a 3-wheeler out of range with no defers left
            assert all(a.startswith("LOAD_SHIFT") for a in allowed)
            continue
        assert set(p.lines) <= allowed
        assert all(not isinstance(parse_action(line), Invalid) for line in p.lines)
        # the shortest valid DEFERs are listed, and every valid kind of the
        # listed stations
        defers = sorted(
            (a for a in allowed if a.startswith("DEFER")),
            key=lambda a: int(a.split()[2]),
        )
        assert [a for a in p.lines if a.startswith("DEFER")] == defers[:DECISION_DEFERS]
        stations = list(
            dict.fromkeys(line.split()[2] for line in p.lines if "ROUTE" in line)
        )
        assert len(stations) <= DECISION_STATIONS
        for s in stations:
            here = {a for a in allowed if a.startswith(f"ROUTE E{obs.request.id} {s} ")}
            assert here <= set(p.lines)
        # nearest first: drive minutes never decrease down the list
        idx = [int(s[1:]) - 1 for s in stations]
        travel = obs.travel_min[idx]
        assert np.all(np.diff(travel) >= 0)
        # and no usable station outside the list is nearer than the last listed one
        usable = np.flatnonzero(obs.route_mask.any(axis=1))
        others = [s for s in usable if s not in idx]
        if others and len(stations) == DECISION_STATIONS:
            assert obs.travel_min[others].min() >= travel[-1]
        res = env.clone().step(p.lines[0])
        assert res.info["valid"], res.info["reason"]


def test_no_request_lists_nothing() -> None:
    env = EVGridEnv()
    obs = env.reset(seed=0, scenario="quiet_night")
    policy = make_policy("greedy_eta")
    while not env.done:
        env.step(policy.act(obs))
        obs = env.observation()
    assert decision_prompt(obs).lines == ()


# --- Grammar over listed lines -----------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        ["ROUTE E7 S3 SLOW"],  # one line: a single literal chain
        ["ROUTE E7 S3 SLOW", "ROUTE E7 S3 FAST", "ROUTE E7 S9 FAST"],  # shared words
        ["ROUTE E12 S1 ULTRA", "DEFER E12 5", "DEFER E12 45"],  # two keywords
        ["A", "A B", "A C D"],  # a line that is a prefix of another
    ],
)
def test_lines_grammar_accepts_exactly_the_lines(lines: list[str]) -> None:
    assert language(parse(lines_grammar(lines))) == set(lines)


def test_lines_grammar_of_a_real_prompt_and_of_nothing() -> None:
    obs = EVGridEnv().reset(seed=0, scenario="evening_peak")
    p = decision_prompt(obs)
    assert language(parse(lines_grammar(p.lines))) == set(p.lines)
    assert language(parse(lines_grammar(p.letters))) == set(p.letters)
    with pytest.raises(ValueError, match="no lines"):
        lines_grammar([])


# --- Length in SmolLM2 tokens --------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    pytest.importorskip("transformers")
    from oracle.gguf_export import CACHE_DIR
    from oracle.smollm2 import HF_DIR_NAME

    if not (CACHE_DIR / HF_DIR_NAME / "tokenizer.json").is_file():
        pytest.skip("SmolLM2's HF copy is not built (python3 -m oracle.smollm2)")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(CACHE_DIR / HF_DIR_NAME))


def test_decision_prompts_stay_near_250_smollm2_tokens(smollm2_tokenizer) -> None:
    counts = [
        len(
            smollm2_tokenizer(decision_prompt(obs).text, add_special_tokens=False)[
                "input_ids"
            ]
        )
        for sc in ("festival_surge", "feeder_fault")
        for _env, obs in observations(sc, seed=1, limit=60)
    ]
    # measured on states greedy_eta plays in four scenarios: median 212, p95 235,
    # max 258
    assert max(counts) <= 270
    assert 150 <= np.mean(counts) <= 240


def test_each_letter_is_one_token_the_same_in_the_list_and_as_the_answer(
    smollm2_tokenizer,
) -> None:
    # the answer is the token the option's line starts with: the model points at it
    p = decision_prompt(EVGridEnv().reset(seed=0, scenario="evening_peak"))
    ids = smollm2_tokenizer(p.text, add_special_tokens=False)["input_ids"]
    for letter in p.letters:
        (answer,) = smollm2_tokenizer(letter, add_special_tokens=False)["input_ids"]
        (start,) = smollm2_tokenizer(f"\n{letter} ", add_special_tokens=False)[
            "input_ids"
        ][1:2]
        assert answer == start
        assert ids.count(answer) >= 1
