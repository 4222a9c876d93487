"""``mappo`` on the candidate interface: the RLlib env's turns and the numpy policy's
are one episode; operators' rows are only caps the core accepts; spaces hold."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
pytest.importorskip("pettingzoo")

from evgrid_core import EVGridEnv, LoadShift  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_core.rollout import run_episode  # noqa: E402
from evgrid_gym.candidate_env import K_DEFAULT, N_FEATURES  # noqa: E402
from evgrid_marl import make_roster  # noqa: E402
from evgrid_marl.operator_rows import (  # noqa: E402
    N_OPERATOR_FEATURES,
    SHIFT_OPTIONS,
    operator_rows,
    operators_due,
)
from evgrid_rl.candidate_marl import CandidateMultiAgentEnv  # noqa: E402
from evgrid_rl.envs import draw_episode  # noqa: E402
from evgrid_rl.policy import ActorMLP  # noqa: E402


def _random_rows_weights(path: Path, seed: int, noop_bias: float) -> Path:
    """Random actors in the export's layout (``fleet.pi.W0``...); ``noop_bias``
    lowers the operators' hold row (``noop`` is features[0]) so they cap often."""
    rng = np.random.default_rng(seed)
    arrays = {}
    # the operators' actor is linear, so noop_bias lowers the hold row's score
    for mid, sizes in (
        ("fleet", [N_FEATURES, 16, 1]),
        ("operator", [N_OPERATOR_FEATURES, 1]),
    ):
        for i, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False)):
            arrays[f"{mid}.pi.W{i}"] = rng.normal(0, 0.5, (b, a)).astype(np.float32)
            arrays[f"{mid}.pi.b{i}"] = rng.normal(0, 0.1, b).astype(np.float32)
    arrays["operator.pi.W0"][:, 0] -= noop_bias
    module_of = {a: a.split("_")[0] for a in make_roster("both").agents}
    meta = {"interface": "marl-candidates", "k": K_DEFAULT,
            "k_op": CandidateMultiAgentEnv().k_op, "module_of": module_of}  # fmt: skip
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(path, **arrays)
    return path


def _env_episode(weights: Path, env_seed: int):  # noqa: ANN202
    """The RLlib env played by the same actors' argmax: its return and shifts."""
    actors = {m: ActorMLP(weights, f"{m}.pi.") for m in ("fleet", "operator")}
    env = CandidateMultiAgentEnv({"scenarios": ["evening_peak", "festival_surge"],
                                  "seed": env_seed})  # fmt: skip
    obs, _ = env.reset()
    total, done = 0.0, False
    while not done:
        acts = {}
        for agent, o in obs.items():
            assert env.observation_spaces[agent].contains(o), agent
            m = o["action_mask"] > 0
            scores = actors[agent.split("_")[0]].logits(o["candidates"][m])[:, 0]
            acts[agent] = int(np.argmax(scores))
        obs, rew, term, _, _ = env.step(acts)
        total += next(iter(rew.values()))  # the team's: every agent paid the same
        assert len(set(rew.values())) == 1
        done = term["__all__"]
    return total, env.shifts, env.core


@pytest.mark.parametrize(("env_seed", "noop_bias"), [(1, 0.0), (2, 4.0)])
def test_the_env_and_the_policy_play_one_episode(
    tmp_path: Path, env_seed: int, noop_bias: float
) -> None:
    weights = _random_rows_weights(tmp_path / "mappo.npz", env_seed, noop_bias)
    total, shifts, core = _env_episode(weights, env_seed)
    scenario, seed = draw_episode(np.random.default_rng(env_seed),
                                  ["evening_peak", "festival_surge"])  # fmt: skip
    res = run_episode(make_policy("mappo", weights=weights), scenario, seed)
    assert res.ret == pytest.approx(total, abs=1e-9)
    assert res.kpis["load_shifts"] == shifts
    if noop_bias:
        assert shifts > 0  # the operators capped


def test_operator_rows_are_hold_and_caps_the_core_accepts() -> None:
    env, greedy = EVGridEnv(), make_policy("greedy_eta")
    obs = env.reset(seed=5, scenario="evening_peak")
    while obs.tick < 6 or obs.load_shifts_left < 2:  # stations drawing power
        env.step(greedy.act(obs))
        obs = env.observation()
    roster = make_roster("both")
    seen = 0
    for op in roster.operators:
        x, answers = operator_rows(obs, roster.stations_of[op])
        assert answers[0] is None and x[0, 0] == 1.0 and (x[1:, 0] == 0).all()
        drawing = [s for s in roster.stations_of[op] if obs.station_kw[s - 1] > 0]
        assert len(answers) == 1 + len(drawing) * len(SHIFT_OPTIONS)
        for a in answers[1:]:
            assert isinstance(a, LoadShift) and a.station in drawing
            assert env.validate(a)[0]
        seen += len(answers) - 1
    assert seen > 0
    op = next(o for o in roster.operators
              if len(operator_rows(obs, roster.stations_of[o])[1]) > 1)  # fmt: skip
    shift = operator_rows(obs, roster.stations_of[op])[1][1]
    env.step(shift)
    x, answers = operator_rows(env.observation(), roster.stations_of[op])
    assert shift.station not in {a.station for a in answers[1:]}  # capped: gone
    assert (x[:, 14] == 1.0).all()  # feeder_stations_capped, on every row


def test_only_operators_of_feeders_forecast_over_their_limit_are_due() -> None:
    env, greedy = EVGridEnv(), make_policy("greedy_eta")
    obs = env.reset(seed=900_003, scenario="festival_surge")
    roster = make_roster("both")
    due_seen = False
    while not env.done:
        if obs.request is not None:
            due = operators_due(obs, -1, roster.stations_of)
            over = {int(f) for f in np.flatnonzero(obs.feeder_forecast > 1.0)}
            want = [o for o in roster.operators
                    if int(obs.feeder_of[roster.stations_of[o][0] - 1]) in over]  # fmt: skip
            assert due == (want if obs.load_shifts_left > 0 else [])
            assert operators_due(obs, obs.tick, roster.stations_of) == []  # answered
            due_seen |= bool(due)
        env.step(greedy.act(obs))
        obs = env.observation()
    assert due_seen  # festival_surge drives a feeder over its limit


def test_holding_the_operators_removes_their_caps_only(tmp_path: Path) -> None:
    from evgrid_rl.shifts import paired

    weights = _random_rows_weights(tmp_path / "mappo.npz", 2, noop_bias=4.0)
    r = paired(weights, "festival_surge", [900_000, 900_001])
    assert (r["load_shifts"] > 0).all() and (r["held_load_shifts"] == 0).all()
    assert (r["return"] != r["held_return"]).any()


def test_hold_operators_needs_the_candidate_interface(tmp_path: Path) -> None:
    flat = tmp_path / "mappo.npz"
    meta = {"module_of": {a: a.split("_")[0] for a in make_roster("both").agents}}
    np.savez(flat, **{"fleet.W0": np.zeros((2, 2)), "fleet.b0": np.zeros(2),
                      "operator.W0": np.zeros((2, 2)), "operator.b0": np.zeros(2),
                      "meta": np.array(json.dumps(meta))})  # fmt: skip
    with pytest.raises(ValueError, match="candidate interface"):
        make_policy("mappo", weights=flat, hold_operators=True)


def test_the_team_return_is_the_earliest_agents_over_all_chunks() -> None:
    from types import SimpleNamespace as NS

    from evgrid_rl.candidate_marl import log_team_return

    def chunk(**returns: float) -> NS:
        return NS(agent_episodes={a: NS(get_return=lambda r=r: r)
                                  for a, r in returns.items()})  # fmt: skip

    logged = []
    logger = NS(log_value=lambda key, value, **kw: logged.append((key, value)))
    first = chunk(operator_F1=-3.0, fleet_car=-2.0)  # operator_F1 acted at reset
    last = chunk(operator_F1=-4.0, fleet_car=-4.0, fleet_cab=-1.5)
    log_team_return(episode=last, prev_episode_chunks=[first], metrics_logger=logger)
    assert logged == [("team_return", -7.0)]
