"""Full episodes over the wire equal the same episodes run in-process."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("openenv")

from server_helpers import as_line, as_typed, check_step, reference  # noqa: E402

from evgrid_core import REWARD_KEYS, EVGridEnv  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_openenv.client import EVGridClient  # noqa: E402


@pytest.mark.parametrize("form", ["text", "typed"])
def test_server_full_episode_matches_in_process(server_url: str, form: str) -> None:
    expected, env = reference("greedy_eta", seed=7, scenario="evening_peak")
    assert len(expected) > 100  # a real episode, not a stub
    with EVGridClient(server_url).sync() as client:
        check_step(client.reset(seed=7, scenario="evening_peak"), expected[0])
        for exp in expected[1:]:
            action = exp[0] if form == "text" else as_typed(exp[0])
            check_step(client.step(action), exp)
        state = client.state()
    assert state.done and state.scenario == "evening_peak" and state.seed == 7
    assert state.step_count == len(expected) - 1
    assert state.kpis.model_dump() == pytest.approx(env.kpi_summary())
    assert state.world["kpis"] == pytest.approx(env.kpi_summary())


def test_server_async_client_plays_an_episode_with_invalid_actions(
    server_url: str,
) -> None:
    # random_valid mixed with garbage lines: invalid steps are paid, not refused.
    expected, _ = reference("random_valid", seed=3, scenario="quiet_night")

    async def play() -> list:
        results = []
        async with EVGridClient(server_url) as client:
            results.append(await client.reset(seed=3, scenario="quiet_night"))
            for exp in expected[1:]:
                results.append(await client.step(exp[0]))
            results.append(await client.reset(seed=3, scenario="quiet_night"))
            results.append(await client.step("ROUTE E1 S1 TURBO"))
        return results

    results = asyncio.run(play())
    for res, exp in zip(results, expected, strict=False):
        check_step(res, exp)
    bad = results[-1].observation
    assert bad.valid is False and bad.reason.startswith("malformed ROUTE")
    assert bad.reward_parts.invalid == pytest.approx(
        -EVGridEnv().config.weights.invalid
    )
    assert bad.action == "ROUTE E1 S1 TURBO"


def test_server_reset_observation_and_state(server_url: str) -> None:
    env = EVGridEnv()
    env.reset(seed=11, scenario="heatwave")
    with EVGridClient(server_url).sync() as client:
        res = client.reset(seed=11, scenario="heatwave", episode_id="run-1")
        grid = res.observation.grid
        assert res.observation.prompt == env.render_text()
        assert grid.request.id == env.observation().request.id
        assert grid.route_mask == env.observation().route_mask.tolist()
        assert set(res.observation.reward_parts.model_dump()) == set(REWARD_KEYS)
        state = client.state()
        assert (state.scenario, state.seed, state.episode_id) == (
            "heatwave",
            11,
            "run-1",
        )
        assert state.step_count == 0 and not state.done
        assert state.world["stations"] == env.state()["stations"]
        # No seed: the server draws one and reports it, so the episode can be replayed.
        res = client.reset()
        state = client.state()
        assert state.scenario == "evening_peak" and isinstance(state.seed, int)
        env.reset(seed=state.seed)
        assert res.observation.prompt == env.render_text()


def test_server_sends_the_inbound_kw_the_sparing_rule_counts(server_url: str) -> None:
    # A client deciding by the feeders sees what the core's sparing rule adds to their
    # forecast: each station's kW from the EVs driving there, due within 30 minutes.
    p, env = make_policy("greedy_eta"), EVGridEnv()
    obs = env.reset(seed=3, scenario="festival_surge")
    p.reset(3)
    seen = 0.0
    with EVGridClient(server_url).sync() as client:
        res = client.reset(seed=3, scenario="festival_surge")
        for _ in range(120):
            assert res.observation.grid.inbound_kw == obs.inbound_kw.tolist()
            seen = max(seen, *res.observation.grid.inbound_kw)
            line = as_line(p.act(obs))
            env.step(line)
            obs = env.observation()
            res = client.step(line)
    assert seen > 0.0  # EVs were driving to a station: the field is not all zeros
