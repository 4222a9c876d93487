"""Contract checks for plug-ins: ``check_policy`` and ``check_grid_model``.

What Gymnasium's ``check_env`` and PettingZoo's ``api_test`` are to their envs: a
third party who writes a policy (the ``evgrid.policies`` entry points) or a grid
model (``evgrid.grid_models``) runs the contract every front end relies on, and a
broken plug-in fails with a ``ContractError`` whose ``rule`` names the broken rule
and whose message says what to fix. Our own policies and grid models pass them
(``tests/core/test_core_checks.py``).

A policy must (``POLICY_RULES``):
  interface      have a ``name`` (str), ``reset(seed)`` and ``act(obs)``;
  answers        answer every observation with a ``Route``, ``Defer``, ``LoadShift``
                 or one text line, without raising and without changing it;
  valid          answer a valid action whenever the request has one (an EV with no
                 valid ROUTE and no DEFER left may get anything);
  deterministic  play the same episode again after ``reset`` with the same seed;
  no_leak        play an episode the same whatever it played before (another
                 episode, left part way).

A grid model must (``GRID_RULES``):
  interface      be built as ``factory(tables, background_kw)`` with ``carry`` and
                 ``forecast``, and ``carry`` return a ``GridTick``;
  shapes         give F values per feeder (S per station for ``station_factor``),
                 all finite;
  units          report the feeders' capacity and background in kW as the
                 scenario's tables and the episode's background give them (the
                 model decides what is carried and shed, not the ratings), and
                 utilisation as a fraction: (background + EV kW) / capacity;
  conservation   carry or shed every kW the stations ask (EV kW + shed = the
                 stations' sum per feeder, none negative), a shedding feeder's
                 stations scaled by ``station_factor`` in [0, 1] to what it carries;
  forecast       forecast utilisation as a fraction: over one tick, (background +
                 asked) / capacity of that tick; never lower over more ticks or
                 with more load;
  inputs         leave its arguments (the tables, the background, the loads) as
                 they were;
  deterministic  answer the same calls with the same floats, built twice;
  episode        run an episode through ``EVGridEnv`` with ``greedy_eta``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .actions import Action, describe_action
from .config import SimConfig
from .env import EVGridEnv
from .episode import episode_inputs
from .grid import GRID_MODELS, GridFactory, GridTick, grid_model_factory
from .observation import Observation
from .policies import Policy, make_policy
from .scenarios import SCENARIOS, get_scenario
from .tables import scenario_tables

POLICY_RULES = ("interface", "answers", "valid", "deterministic", "no_leak")
GRID_RULES = ("interface", "shapes", "units", "conservation", "forecast", "inputs",
              "deterministic", "episode")  # fmt: skip


class ContractError(AssertionError):
    """A plug-in broke its contract: ``rule`` (one of ``POLICY_RULES`` or
    ``GRID_RULES``) names which; the message says where and what to fix."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"[{rule}] {message}")
        self.rule = rule


def _fail(rule: str, message: str) -> None:
    raise ContractError(rule, message)


# --- Policies ---------------------------------------------------------------------------
def check_policy(
    policy: str | Policy | Callable[[], Policy],
    *,
    scenarios: Iterable[str] | None = None,
    seeds: tuple[int, int] = (0, 1),
    decisions: int = 60,
    config: SimConfig | None = None,
) -> dict[str, int]:
    """Run the policy contract (the module's docstring) on each of ``scenarios``
    (default: all), the first ``decisions`` decisions of episodes ``seeds``; raise
    ``ContractError`` at the first broken rule. ``policy``: a registered name, an
    instance, or a factory of fresh instances. Returns decisions checked per scenario.
    """
    if not _is_instance(policy):  # a name or a factory (a class included)
        new = lambda: _policy_instance(policy)  # noqa: E731
        twice = "by two new instances"
    else:
        inst = _policy_instance(policy)
        new = lambda: inst  # noqa: E731
        twice = "when played twice in a row"
    a, b = seeds
    if a == b:
        raise ValueError("seeds are two different episode seeds")
    checked = {}
    for name in scenarios or SCENARIOS:
        get_scenario(name)  # an unknown name: its own clear error
        first = _play(new(), name, b, decisions, config)
        again = _play(new(), name, b, decisions, config)
        if again != first:
            _fail("deterministic", _differs(name, b, first, again, twice, "draw "
                  "random numbers only from a generator seeded in reset(seed); keep "
                  "no state in the class or the module"))  # fmt: skip
        p = new()
        _play(p, name, a, decisions // 2 + 1, config)  # left part way, as users do
        after = _play(p, name, b, decisions, config)
        if after != first:
            _fail("no_leak", _differs(name, b, first, after, f"after part of episode "
                  f"{a} was played in between", "reset(seed) must set every piece of "
                  "state an episode reads"))  # fmt: skip
        checked[name] = len(first)
    return checked


def _policy_instance(policy: str | Policy | Callable[[], Policy]) -> Policy:
    p = make_policy(policy) if isinstance(policy, str) else policy
    if not _is_instance(p) and callable(p):
        p = p()
    for attr in ("reset", "act"):
        if not callable(getattr(p, attr, None)):
            _fail("interface", f"{type(p).__name__} has no {attr}() method: a "
                  "policy has name, reset(seed) and act(observation)")  # fmt: skip
    if not isinstance(getattr(p, "name", None), str):
        _fail("interface", f"{type(p).__name__}.name is not a str: give the policy "
              "the name it is registered under")  # fmt: skip
    return p


def _is_instance(policy: object) -> bool:
    return not isinstance(policy, str | type) and hasattr(policy, "act")


def _play(p: Policy, scenario: str, seed: int, decisions: int,
          config: SimConfig | None) -> list[str]:  # fmt: skip
    """The answers (as text) of ``p`` over the first ``decisions`` decisions."""
    env = EVGridEnv(config)
    obs = env.reset(seed=seed, scenario=scenario)
    p.reset(seed)
    out: list[str] = []
    while not env.done and len(out) < decisions:
        where = f"{p.name} on {scenario} seed {seed}, decision {len(out) + 1}"
        before = _snapshot(obs)
        try:
            answer = p.act(obs)
        except Exception as e:  # noqa: BLE001 - any error is the plug-in's to fix
            _fail("answers", f"{where}: act raised {type(e).__name__}: {e}")
        if not isinstance(answer, Action | str):
            _fail("answers", f"{where}: act returned {type(answer).__name__}; "
                  "return a Route, Defer, LoadShift or one line of text")  # fmt: skip
        if _snapshot(obs) != before:
            _fail("answers", f"{where}: act changed the observation; copy what "
                  "you need to change (observations are shared within a tick)")  # fmt: skip
        text = answer if isinstance(answer, str) else describe_action(answer)
        ok, reason = env.validate(answer)
        if not ok and obs.has_valid_answer:
            _fail("valid", f"{where}: answered {text!r}, refused: {reason}. The "
                  "valid answers are the ROUTEs in obs.route_mask and the DEFERs in "
                  "obs.defer_options")  # fmt: skip
        out.append(text)
        env.step(answer)
        obs = env.observation()
    return out


def _snapshot(obs: Observation) -> list[Any]:
    out = []
    for f in dataclasses.fields(obs):
        if not f.compare:  # a memo of derived forms, filled as they are asked for
            continue
        v = getattr(obs, f.name)
        out.append(v.tobytes() if isinstance(v, np.ndarray) else repr(v))
    return out


def _differs(scenario: str, seed: int, a: list[str], b: list[str], how: str,
             fix: str) -> str:  # fmt: skip
    k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
             min(len(a), len(b)))  # fmt: skip
    x, y = (a[k] if k < len(a) else "(end)"), (b[k] if k < len(b) else "(end)")
    return (f"{scenario} seed {seed} played differently {how}: decision {k + 1} "
            f"was {x!r}, then {y!r}; {fix}")  # fmt: skip


# --- Grid models --------------------------------------------------------------------------
def check_grid_model(
    model: str | GridFactory,
    *,
    scenarios: Sequence[str] = ("evening_peak", "feeder_fault", "festival_surge"),
    seed: int = 0,
    ticks: int = 24,
    config: SimConfig | None = None,
) -> dict[str, int]:
    """Run the grid-model contract (the module's docstring) on ``scenarios``,
    ``ticks`` ticks each (spread over the episode, loads from none to twice a
    feeder's capacity), and one episode through ``EVGridEnv``; raise
    ``ContractError`` at the first broken rule. ``model``: a registered name or a
    factory ``(tables, background_kw) -> model``. Returns ticks checked per scenario.
    """
    factory = grid_model_factory(model) if isinstance(model, str) else model
    config = config or SimConfig()
    checked = {}
    for name in scenarios:
        sc = get_scenario(name)
        tables = scenario_tables(sc, config)
        _, noise = episode_inputs(seed, sc, config, draw=False)
        background = tables.background_kw * noise
        kept = (tables.background_kw.copy(), tables.capacity_kw.copy(),
                background.copy())  # fmt: skip
        calls = _grid_calls(tables, seed, ticks)
        first = _carry_all(factory, tables, background, calls, name)
        now = (tables.background_kw, tables.capacity_kw, background)
        if any(not np.array_equal(x, y) for x, y in zip(kept, now, strict=True)):
            _fail("inputs", f"{name}: the model changed the scenario's tables or the "
                  "background it was built with; copy what it changes")  # fmt: skip
        again = _carry_all(factory, tables, background, calls, name)
        if repr(again) != repr(first):
            _fail("deterministic", f"{name}: a second model built from the same "
                  "inputs answered the same calls with other floats; draw nothing "
                  "at random, keep no state between episodes")  # fmt: skip
        checked[name] = len(calls)
    _episode(factory, scenarios[0], seed)
    return checked


def _grid_calls(tables: Any, seed: int, ticks: int) -> list[tuple[int, np.ndarray]]:
    """(tick, station kW) pairs: from no load to about twice each feeder's capacity."""
    rng = np.random.default_rng([seed, 0xC4EC])
    T, S = tables.capacity_kw.shape[0], len(tables.feeder_of)
    per_station = (
        tables.capacity_kw.max(axis=0)[tables.feeder_of]
        / np.bincount(tables.feeder_of)[tables.feeder_of]
    )
    out = []
    for k, t in enumerate(np.linspace(0, T - 1, max(ticks, 1)).round().astype(int)):
        scale = (0.0, 0.3, 1.0, 2.0)[k % 4]
        out.append((int(t), per_station * scale * rng.random(S)))
    return out


def _carry_all(factory: GridFactory, tables: Any, background: np.ndarray,
               calls: list[tuple[int, np.ndarray]], scenario: str) -> list:  # fmt: skip
    try:
        model = factory(tables, background)
    except Exception as e:  # noqa: BLE001
        _fail("interface", f"{scenario}: factory(tables, background_kw) raised "
              f"{type(e).__name__}: {e}")  # fmt: skip
    for attr in ("carry", "forecast"):
        if not callable(getattr(model, attr, None)):
            _fail("interface", f"{type(model).__name__} has no {attr}(): a grid "
                  "model has carry(tick, station_kw) and forecast(tick, asked_kw, ticks)")  # fmt: skip
    out = []
    for t, kw in calls:
        asked = kw.copy()
        where = f"{scenario}, tick {t}"
        try:
            g = model.carry(t, asked)
        except Exception as e:  # noqa: BLE001
            _fail("interface", f"{where}: carry raised {type(e).__name__}: {e}")
        if not np.array_equal(asked, kw):
            _fail("inputs", f"{where}: carry changed the station_kw it was given")
        _check_tick(g, tables, background[t], kw, t, where)
        fc = _check_forecast(model, t, tables, background, kw, where)
        factor = g.station_factor
        out.append([np.asarray(v, dtype=float).tolist() for v in
                    (g.ev_kw, g.shed_kw, g.utilisation)]
                   + [None if factor is None else np.asarray(factor).tolist(), fc])  # fmt: skip
    return out


def _check_tick(g: Any, tables: Any, background: np.ndarray, kw: np.ndarray,
                t: int, where: str) -> None:  # fmt: skip
    if not isinstance(g, GridTick):
        _fail(
            "interface", f"{where}: carry returned {type(g).__name__}, not a GridTick"
        )
    F, S = tables.capacity_kw.shape[1], len(kw)
    fields = {k: np.asarray(getattr(g, k), dtype=float) for k in
              ("capacity_kw", "background_kw", "ev_kw", "shed_kw", "utilisation")}  # fmt: skip
    for k, v in fields.items():
        if v.shape != (F,) or not np.isfinite(v).all():
            _fail("shapes", f"{where}: GridTick.{k} must be {F} finite values, one "
                  f"per feeder; got shape {v.shape}")  # fmt: skip
    factor = g.station_factor
    if factor is not None and (
        np.shape(factor) != (S,) or not np.isfinite(factor).all()
    ):
        _fail("shapes", f"{where}: GridTick.station_factor is None or {S} finite "
              f"values, one per station; got shape {np.shape(factor)}")  # fmt: skip
    cap, bg = tables.capacity_kw[t], background
    for k, want in (("capacity_kw", cap), ("background_kw", bg)):
        if not np.allclose(fields[k], want, rtol=1e-9, atol=1e-9):
            _fail("units", f"{where}: GridTick.{k} is {fields[k].round(1).tolist()}, "
                  f"the episode's is {np.round(want, 1).tolist()} [kW]: report them in "
                  "kW as the tables give them (MW, or a rating of your own?)")  # fmt: skip
    ev, shed = fields["ev_kw"], fields["shed_kw"]
    util = (bg + ev) / cap
    if not np.allclose(fields["utilisation"], util, rtol=1e-9, atol=1e-12):
        _fail("units", f"{where}: GridTick.utilisation is "
              f"{fields['utilisation'].round(4).tolist()}, (background + ev_kw) / "
              f"capacity_kw is {util.round(4).tolist()}: a fraction, not a percentage")  # fmt: skip
    asked = np.bincount(tables.feeder_of, weights=kw, minlength=F)
    tol = 1e-6 * max(1.0, float(asked.max()))
    if (
        (ev < -tol).any()
        or (shed < -tol).any()
        or not np.allclose(ev + shed, asked, rtol=1e-9, atol=tol)
    ):
        _fail("conservation", f"{where}: ev_kw + shed_kw is {(ev + shed).round(3).tolist()}"
              f", the stations asked {asked.round(3).tolist()} [kW]: every kW asked is "
              "carried or shed, none negative")  # fmt: skip
    if factor is None:
        if (shed > tol).any():
            _fail("conservation", f"{where}: shed {shed.round(3).tolist()} kW with "
                  "station_factor None: say by how much each station's EV load is scaled")  # fmt: skip
        return
    f = np.asarray(factor, dtype=float)
    got = np.bincount(tables.feeder_of, weights=kw * f, minlength=F)
    if (
        (f < 0).any()
        or (f > 1 + 1e-12).any()
        or not np.allclose(got, ev, rtol=1e-9, atol=tol)
    ):
        _fail("conservation", f"{where}: the stations' kW scaled by station_factor "
              f"sum to {got.round(3).tolist()} per feeder, ev_kw is "
              f"{ev.round(3).tolist()}: factors in [0, 1] that give what is carried")  # fmt: skip


def _check_forecast(model: Any, t: int, tables: Any, background: np.ndarray,
                    kw: np.ndarray, where: str) -> list[float]:  # fmt: skip
    F = tables.capacity_kw.shape[1]
    asked = np.bincount(tables.feeder_of, weights=kw, minlength=F)
    kept = asked.copy()
    try:
        one = np.asarray(model.forecast(t, asked, 1), dtype=float)
        more = np.asarray(model.forecast(t, asked, 6), dtype=float)
        heavier = np.asarray(model.forecast(t, asked + 100.0, 6), dtype=float)
    except Exception as e:  # noqa: BLE001
        _fail("interface", f"{where}: forecast raised {type(e).__name__}: {e}")
    if not np.array_equal(asked, kept):
        _fail("inputs", f"{where}: forecast changed the asked_kw it was given")
    for v in (one, more, heavier):
        if v.shape != (F,) or not np.isfinite(v).all():
            _fail("shapes", f"{where}: forecast must give {F} finite values, one per "
                  f"feeder; got shape {v.shape}")  # fmt: skip
    want = (background[t] + asked) / tables.capacity_kw[t]
    if not np.allclose(one, want, rtol=1e-6, atol=1e-9):
        _fail("forecast", f"{where}: forecast over one tick is {one.round(4).tolist()}, "
              f"(background + asked) / capacity is {want.round(4).tolist()}: a "
              "fraction of capacity, not a percentage or kW")  # fmt: skip
    if (more < one - 1e-9).any() or (heavier < more - 1e-9).any():
        _fail("forecast", f"{where}: the forecast fell with more ticks or more load: "
              "it is the highest utilisation over the ticks ahead")  # fmt: skip
    return more.tolist()


def _episode(factory: GridFactory, scenario: str, seed: int) -> None:
    name = f"_check_grid_model_{id(factory)}"
    GRID_MODELS[name] = factory
    try:
        env = EVGridEnv(SimConfig(grid=name))
        obs = env.reset(seed=seed, scenario=scenario)
        policy = make_policy("greedy_eta")
        policy.reset(seed)
        while not env.done:
            env.step(policy.act(obs))
            obs = env.observation()
        if not np.isfinite(env.kpis.total_return):
            _fail("episode", f"{scenario} seed {seed}: the episode's return is "
                  f"{env.kpis.total_return}")  # fmt: skip
    except ContractError:
        raise
    except Exception as e:  # noqa: BLE001
        _fail("episode", f"{scenario} seed {seed}: an episode under the model raised "
              f"{type(e).__name__}: {e}")  # fmt: skip
    finally:
        del GRID_MODELS[name]
