"""Figures of a comparison that look wrong at first sight, explained from the records.

Each note is computed from the records it explains (and, for the answers no policy
can avoid, one replayed episode that names the EV); a note whose situation the
records do not show is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from evgrid_core import SimConfig

from .engineering import grid_figures, has_figures, owner_figures
from .runner import OPTIMUM, record_grid

Runs = Mapping[str, Mapping[int, Mapping[str, Any]]]  # policy -> seed -> record


def _mean(runs: Mapping[int, Mapping[str, Any]], fig: str) -> float:
    return float(
        np.mean([(grid_figures(r) | owner_figures(r))[fig] for r in runs.values()])
    )


def invalid_answers(r: Mapping[str, Any]) -> int:
    """How many invalid answers an episode's policy gave (from its KPIs)."""
    k = r["kpis"]
    return round(k["invalid_action_pct"] * k["steps"] / 100.0)


# --- Fewer EVs fully charged, more kWh ------------------------------------------------
def served_vs_energy(sc: str, runs: Runs) -> list[str]:
    """Why the optimum can fully charge fewer EVs than a policy yet deliver more."""
    if OPTIMUM not in runs:
        return []
    others = [p for p in runs if p != OPTIMUM]
    if not others:
        return []
    most = max(others, key=lambda p: _mean(runs[p], "evs_served"))
    o, m = runs[OPTIMUM], runs[most]
    if not (
        _mean(o, "evs_served") < _mean(m, "evs_served")
        and _mean(o, "energy_mwh") >= _mean(m, "energy_mwh")
    ):
        return []

    def f(runs_: Mapping[int, Mapping[str, Any]], fig: str, nd: int = 1) -> str:
        return f"{_mean(runs_, fig):.{nd}f}"

    return [
        f"`{sc}`: {f(o, 'evs_served')} EVs against {most}'s "
        f"{f(m, 'evs_served')}, yet {f(o, 'energy_mwh', 3)} MWh against "
        f"{f(m, 'energy_mwh', 3)}. It plugs in more EVs ({f(o, 'evs_plugged_in')} "
        f"against {f(m, 'evs_plugged_in')}) and more of them are still charging when "
        f"the window closes ({f(o, 'still_charging')} against "
        f"{f(m, 'still_charging')})."
    ]


# --- Invalid answers every policy gives -------------------------------------------------
def forced_answers(scenario: str, seed: int, grid: str) -> list[dict[str, Any]]:
    """The requests of an episode for which no action was valid: no station in
    reach (the route mask empty) and no DEFER left. Played with ``nearest``; the
    EVs that meet such a state are the same under any policy that reaches it."""
    from evgrid_core import EVGridEnv
    from evgrid_core.policies import make_policy

    env = EVGridEnv(SimConfig(grid=grid))
    obs = env.reset(seed=seed, scenario=scenario)
    policy = make_policy("nearest")
    policy.reset(seed)
    road_km = env.city.road_km
    out = []
    while not env.done:
        req = obs.request
        if req is not None and not obs.has_valid_answer:
            node = env.city.node_index(req.node)
            out.append(
                {
                    "ev": req.id,
                    "class": req.klass,
                    "node": req.node,
                    "range_km": float(req.range_km),
                    "nearest_km": float(road_km[node].min()),
                    "defers": int(req.defers),
                }
            )
        env.step(policy.act(obs))
        obs = env.observation()
    return out


def invalid_every_policy(sc: str, runs: Runs, *, replay: bool = True) -> list[str]:
    """Why every policy (random_valid, which picks only valid actions, included)
    shows the same small share of invalid actions."""
    others = [p for p in runs if p != OPTIMUM]
    if not others:
        return []
    seeds = sorted(set.intersection(*(set(runs[p]) for p in others)))
    forced = [s for s in seeds if all(invalid_answers(runs[p][s]) > 0 for p in others)]
    lines = []
    if forced:
        s0 = forced[0]
        ref = runs[others[0]][s0]
        n_inv = min(invalid_answers(runs[p][s0]) for p in others)
        steps = int(ref["kpis"]["steps"])
        n_seeds = len(runs[others[0]])
        line = (
            f"`{sc}`: every policy but the optimum gives {n_inv} invalid answer(s) "
            f"on seed(s) "
            f"{', '.join(map(str, forced))} and on no other: "
            f"{100 * n_inv / steps:.2f} % of that episode's {steps} decisions, "
            f"{100 * n_inv / steps / n_seeds:.2f} % as a mean over {n_seeds} seeds. "
            "No action was valid there: "
        )
        found = forced_answers(sc, s0, record_grid(ref)) if replay else []
        if found:
            line += "; ".join(
                f"E{e['ev']} ({e['class']} at {e['node']}, {e['range_km']:.1f} km of "
                f"range, the nearest station {e['nearest_km']:.1f} km by road) "
                f"had used its {e['defers']} DEFERs"
                for e in found
            )
            line += f" (seed {s0}, replayed)."
        else:
            line += "an EV whose range reached no station had used its DEFERs."
        lines.append(line)
    if OPTIMUM in runs:
        o = runs[OPTIMUM]
        mix = [r.get("optimum", {}).get("plan_mix", {}) for r in o.values()]
        strand = sum(m.get("STRAND", 0) for m in mix)
        n_inv = sum(invalid_answers(r) for r in o.values())
        if n_inv:
            lines.append(
                f"`{sc}`: the optimum gives {n_inv} invalid answers over {len(o)} "
                f"seeds ({100 * n_inv / sum(r['kpis']['steps'] for r in o.values()):.2f}"
                f" % of its decisions), {strand} of them planned refusals (STRAND)."
            )
    return lines


# --- Overload minutes: over the limit vs at it -----------------------------------------
def overload_vs_limit(sc: str, runs: Runs) -> list[str]:
    """Why random_valid can look more careful with the feeders than the optimum."""
    if OPTIMUM not in runs or "random_valid" not in runs:
        return []
    o, r = runs[OPTIMUM], runs["random_valid"]
    soft = 100 * SimConfig().soft_limit

    def g(runs_: Mapping[int, Mapping[str, Any]], fig: str) -> str:
        return f"{_mean(runs_, fig):.2f}"

    head = f"`{sc}`: "
    if _mean(o, "over_feeder_min") > _mean(r, "over_feeder_min"):
        return [
            head + f"the optimum is over a limit {g(o, 'over_feeder_min')} "
            f"feeder-min per episode, random_valid {g(r, 'over_feeder_min')}: the "
            "optimum's plan class or its grid rows let load through that the env "
            "shed; see the solver line."
        ]
    worse = [
        (name, fig)
        for name, fig in (
            ("at its limit", "at_limit_min"),
            (f"above {soft:.0f} %", "above_soft_min"),
        )
        if _mean(o, fig) > _mean(r, fig)
    ]
    if not worse:
        return []
    return [
        head + f"over a limit the optimum is {g(o, 'over_feeder_min')} feeder-min "
        f"per episode ({g(o, 'shed_mwh')} MWh shed), random_valid "
        f"{g(r, 'over_feeder_min')} ({g(r, 'shed_mwh')} MWh). The optimum spends "
        "more time with a feeder "
        + " and ".join(
            f"{name} ({g(o, fig)} min against {g(r, fig)})" for name, fig in worse
        )
        + f"; random_valid leaves "
        f"{_mean(r, 'gave_up') + _mean(r, 'turned_away'):.1f} EVs per episode "
        "uncharged."
    ]


# The notes: (title, what explains it, the function giving each scenario's facts).
NOTES = (
    (
        "The optimum fully charges fewer EVs than a heuristic, yet delivers more "
        "energy",
        "'Fully charged' counts only sessions that reached their target inside the "
        "window. The optimum plugs in more EVs, and more of them are still charging "
        "when the window closes. The reward prices waiting, EVs left uncharged and "
        "the energy still owed at the end, not finished sessions, so starting one "
        "more session is worth more than finishing one sooner. Read 'fully charged' "
        "with 'still charging' and the MWh beside it.",
        served_vs_energy,
    ),
    (
        "Every policy, the optimum and random_valid included, shows invalid actions",
        "The same seed gives every policy the same invalid answer: an EV whose "
        "remaining range reaches no station can only be deferred, and once its "
        "DEFERs run out no action is valid, so whatever a policy answers is "
        "counted invalid and turns the EV away (a rule of the core: see "
        "`rules.route_mask`, `rules.defer_options`; no policy can avoid it). The "
        "optimum's larger share is its own choice: its plan turns an EV away where "
        "serving it would cost more than the stranded and invalid costs together, "
        "and the env has no valid action that declines an EV, so a planned refusal "
        "is an invalid answer. These are decisions, not errors; they show under "
        "'turned away'. A share is per episode, then averaged over seeds: one "
        "answer in a 140-decision episode is 0.71 %, 0.04 % over 20 seeds.",
        invalid_every_policy,
    ),
    (
        "random_valid looks easier on the feeders than the optimum",
        "Over a limit means load asked above it, which protection shed. The optimum "
        "plans EV load up to what each feeder can carry, so its load touches 100 % "
        "of a limit, and spends long above the soft limit, without passing it. random_valid leaves so many "
        "EVs uncharged that its feeders carry less. 'At its limit' and 'above 90 %' "
        "are not overloads; read 'over the limit'.",
        overload_vs_limit,
    ),
)


def explanations(
    grouped: Mapping[str, Runs], scenarios: list[str], *, replay: bool = True
) -> list[str]:
    """The notes the records show, as markdown: each explained once, with its
    figures per scenario."""
    lines: list[str] = []
    for title, why, facts in NOTES:
        found = []
        for sc in scenarios:
            runs = grouped.get(sc, {})
            if not runs or not all(
                has_figures(r) for pr in runs.values() for r in pr.values()
            ):
                continue
            if facts is invalid_every_policy:
                found += facts(sc, runs, replay=replay)
            else:
                found += facts(sc, runs)
        if found:
            lines += [f"**{title}.** {why}", ""]
            lines += [f"- {f}" for f in found] + [""]
    return lines
