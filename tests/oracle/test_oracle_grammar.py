"""The GBNF grammars against the core's parser and validator, in both directions.

Python side: an independent GBNF reader (gbnf_ref) samples and matches the grammar
text. llama.cpp side: its grammar sampler checks the same corpora and generates
under the grammar.
"""

from __future__ import annotations

import numpy as np
import pytest
from gbnf_ref import language, matches, parse, sample
from llama_grammar_check import grammar_accepts

from evgrid_core import (
    ChargerKind,
    Defer,
    EVGridEnv,
    Invalid,
    LoadShift,
    Route,
    format_action,
    parse_action,
)
from evgrid_core.actions import DEFER_MINUTES, SHIFT_CAP_PCT, SHIFT_MINUTES
from evgrid_core.policies import make_policy
from oracle.grammar import (
    action_grammar,
    allowed_actions,
    max_answer_tokens,
    step_grammar,
)

EDGE_IDS = (1, 2, 9, 10, 11, 99, 100, 101, 999, 1000, 1234, 9998, 9999)


def parser_accepts(line: str) -> bool:
    """The grammar's language is the parser's, over lines with no outer whitespace."""
    return line == line.strip() and not isinstance(parse_action(line), Invalid)


def accepted_corpus(n_random: int, seed: int) -> list[str]:
    """Canonical lines: every value of every field, edge ids, and random ids."""
    rng = np.random.default_rng(seed)
    ids = list(EDGE_IDS) + [int(i) for i in rng.integers(1, 10_000, n_random)]
    lines = set()
    for i, j in zip(ids, reversed(ids), strict=True):
        lines.update(format_action(Route(i, j, k)) for k in ChargerKind)
        lines.update(format_action(Defer(i, m)) for m in DEFER_MINUTES)
        lines.update(
            format_action(LoadShift(j, c, m))
            for c in SHIFT_CAP_PCT
            for m in SHIFT_MINUTES
        )
    return sorted(lines)


def mutants(lines: list[str], n: int, seed: int) -> list[str]:
    """Near misses: one or two characters inserted, deleted or replaced."""
    rng = np.random.default_rng(seed)
    alphabet = list("0123456789 ESRFULTDAOWHIFX_-\n") + ["e", "s", "  "]
    out = []
    for _ in range(n):
        s = lines[int(rng.integers(len(lines)))]
        for _ in range(int(rng.integers(1, 3))):
            pos = int(rng.integers(len(s) + 1))
            op = int(rng.integers(3))
            ch = alphabet[int(rng.integers(len(alphabet)))]
            if op == 0:
                s = s[:pos] + ch + s[pos:]
            elif op == 1 and s:
                s = s[:pos] + s[pos + 1 :]
            else:
                s = s[:pos] + ch + s[pos + 1 :]
        out.append(s)
    return out


HAND_REJECTS = [
    # why each must be rejected by parser and grammar alike
    "ROUTE E0 S1 FAST",  # ids start at 1
    "ROUTE E01 S1 FAST",  # no leading zeros
    "ROUTE E10000 S1 FAST",  # at most 4 digits
    "route E1 S1 FAST",  # keywords are upper case
    "ROUTE E1 S1 fast",  # kinds are upper case
    "ROUTE E1 S1 MEDIUM",  # not a charger kind
    "ROUTE  E1 S1 FAST",  # single spaces only
    "ROUTE E1 S1",  # missing field
    "ROUTE E1 S1 FAST X",  # trailing field
    "ROUTE S1 E1 FAST",  # fields in order
    "DEFER E1 7",  # not a defer option
    "DEFER E1 05",  # not canonical
    "LOAD_SHIFT S1 50 20",  # not a shift length
    "LOAD_SHIFT S1 100 30",  # not a cap
    "LOAD-SHIFT S1 50 30",  # underscore, not dash
    "NOOP",  # unknown action
    "",  # empty
]


# --- The whole language --------------------------------------------------------------------


def test_action_grammar_is_generated_from_the_syntax_table() -> None:
    g = action_grammar()
    lines = g.splitlines()
    assert lines[0] == "root ::= route | defer | load-shift"
    assert 'route ::= "ROUTE" " " e-id " " s-id " " route-3' in lines
    assert 'route-3 ::= "SLOW" | "FAST" | "ULTRA"' in lines
    assert 'defer-2 ::= "5" | "10" | "15" | "20" | "30" | "45" | "60"' in lines
    assert (
        'load-shift ::= "LOAD_SHIFT" " " s-id " " load-shift-2 " " load-shift-3'
        in lines
    )
    assert 'e-id ::= "E" digits' in lines
    assert "digits ::= [1-9] [0-9]{0,3}" in lines


def test_every_string_sampled_from_the_grammar_parses_back_to_itself() -> None:
    rules = parse(action_grammar())
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(5000):
        s = sample(rules, rng)
        parsed = parse_action(s)
        assert not isinstance(parsed, Invalid), (s, parsed)
        assert format_action(parsed) == s
        seen.add(s.split(" ", 1)[0])
    assert seen == {"ROUTE", "DEFER", "LOAD_SHIFT"}


def test_grammar_and_parser_agree_on_canonical_lines_and_near_misses() -> None:
    rules = parse(action_grammar())
    good = accepted_corpus(200, seed=1)
    assert all(parser_accepts(s) for s in good)
    corpus = good + mutants(good, 4000, seed=2) + HAND_REJECTS
    disagree = [s for s in corpus if matches(rules, s) != parser_accepts(s)]
    assert disagree == []
    assert not any(matches(rules, s) for s in HAND_REJECTS)
    n_rejected = sum(not parser_accepts(s) for s in corpus)
    assert n_rejected > 1000  # the mutants really probe the boundary


def test_llama_cpp_grammar_check_accepts_exactly_what_the_parser_accepts(
    tiny_llama,
) -> None:
    g = action_grammar()
    good = accepted_corpus(40, seed=3)
    assert all(grammar_accepts(tiny_llama, g, s) for s in good)
    near = mutants(good, 300, seed=4) + HAND_REJECTS
    disagree = [
        s for s in near if grammar_accepts(tiny_llama, g, s) != parser_accepts(s)
    ]
    assert disagree == []


def test_llama_cpp_generates_only_parsable_lines_under_the_grammar(tiny_llama) -> None:
    from llama_cpp import LlamaGrammar

    grammar = LlamaGrammar.from_string(action_grammar(), verbose=False)
    outs = set()
    for seed in range(25):
        out = tiny_llama.create_completion(
            f"<|im_start|>user\ndecide {seed}<|im_end|>\n<|im_start|>assistant\n",
            max_tokens=max_answer_tokens(),
            temperature=1.5,
            top_k=0,
            top_p=1.0,
            min_p=0.0,
            grammar=grammar,
            seed=seed,
        )
        text = out["choices"][0]["text"]
        assert out["choices"][0]["finish_reason"] == "stop", text
        assert parser_accepts(text), text
        outs.add(text)
    assert len(outs) > 12  # sampled, not one answer repeated


# --- The per-step language -------------------------------------------------------------------


def observations(scenario: str, seed: int, every: int = 7, limit: int = 6):
    """(env, obs) pairs along a greedy episode: queues, caps and shifts build up."""
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    policy = make_policy("price_renewable")
    policy.reset(seed)
    out, step = [], 0
    while not env.done and len(out) < limit:
        if step % every == 0:
            out.append((env.clone(), obs))
        env.step(policy.act(obs))
        obs = env.observation()
        step += 1
    return out


@pytest.mark.parametrize(
    "scenario", ["evening_peak", "feeder_fault", "festival_surge", "quiet_night"]
)
def test_step_grammar_language_is_exactly_the_valid_actions(scenario: str) -> None:
    rng = np.random.default_rng(5)
    for env, obs in observations(scenario, seed=1):
        text = step_grammar(obs)
        assert text is not None
        allowed = allowed_actions(obs)
        assert language(parse(text)) == set(allowed)
        r = obs.request
        assert all(f"E{r.id} " in a for a in allowed if not a.startswith("LOAD_SHIFT"))
        for line in rng.choice(allowed, size=min(12, len(allowed)), replace=False):
            res = env.clone().step(str(line))
            assert res.info["valid"], (line, res.info["reason"])
        # and what the mask forbids is outside the language
        banned = np.argwhere(~obs.route_mask)
        for s, k in banned[:10]:
            line = f"ROUTE E{r.id} S{s + 1} {ChargerKind(int(k)).name}"
            assert line not in allowed
            assert not env.clone().step(line).info["valid"]
        wrong_ev = f"DEFER E{r.id + 1} {DEFER_MINUTES[0]}"
        assert not matches(parse(text), wrong_ev)


def test_step_grammar_without_load_shift_and_at_the_end() -> None:
    env = EVGridEnv()
    obs = env.reset(seed=0, scenario="evening_peak")
    text = step_grammar(obs, load_shift=False)
    assert text is not None and "LOAD_SHIFT" not in text
    lang = language(parse(text))
    assert lang == {a for a in allowed_actions(obs) if not a.startswith("LOAD_SHIFT")}
    policy = make_policy("greedy_eta")
    while not env.done:
        env.step(policy.act(obs))
        obs = env.observation()
    assert step_grammar(obs) is None
    assert allowed_actions(obs) == []


def test_llama_cpp_reads_step_grammars(tiny_llama) -> None:
    for _env, obs in observations("heatwave", seed=2, limit=3):
        text = step_grammar(obs)
        allowed = allowed_actions(obs)
        assert grammar_accepts(tiny_llama, text, allowed[0])
        assert grammar_accepts(tiny_llama, text, allowed[-1])
        r = obs.request
        assert not grammar_accepts(tiny_llama, text, f"DEFER E{r.id + 1} 5")


def test_max_tokens_covers_the_longest_action_one_token_per_character() -> None:
    longest = max(
        len(format_action(a))
        for a in (
            Route(9999, 9999, ChargerKind.ULTRA),
            Defer(9999, 60),
            LoadShift(9999, 75, 60),
        )
    )
    assert max_answer_tokens() >= longest + 1
