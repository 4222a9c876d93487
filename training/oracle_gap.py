"""Where the Oracle loses to its teacher: its own episodes, each disagreement scored.

The learner (the Oracle as served: llama.cpp, grammar, the shipped listing) plays a
seed. At each decision the teacher (``distilled``) is asked too; where the two pick
differently, both lines are played on a copy of the env to the episode's end with
the teacher answering after (the same exogenous world in every copy, so the one
decision is the only difference). A row keeps the state's key (scenario, seed,
step), both lines, what kind of disagreement it is and both returns; the episode's
summary keeps the learner's return. The look-ahead's better line is a label on the
learner's own states (DAgger), for a later fit.

    python3 -m training.oracle_gap --scenarios festival_surge,evening_peak \\
        --seeds 50:54 --out runs/oracle-gap --workers 2

Resumable (an episode is done when its summary is written); ``--report`` only
summarises a folder. The per-episode sum of the look-ahead differences is not the
episode's gap exactly (each is scored with the teacher playing on, not the
learner), but it says which decisions the gap comes from.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.runner import load_records
from evgrid_core import EVGridEnv, aggregate, format_action
from evgrid_core.actions import Defer, Route, parse_action
from evgrid_core.charging import plug_kw

from .labels import (
    DECISIONS_FILE,
    EPISODES_FILE,
    check_scenarios,
    episode_runs,
    parse_seeds,
)
from .rewards import rollout

KINDS = ("kind", "station", "defer", "other")  # what the two picks differ in


def difference(a: Any, b: Any) -> str:
    """'kind': both ROUTE to one station, another charger kind; 'station': both
    ROUTE, to different stations; 'defer': one of them DEFERs; else 'other'."""
    if isinstance(a, Route) and isinstance(b, Route):
        return "kind" if a.station == b.station else "station"
    if isinstance(a, Defer) or isinstance(b, Defer):
        return "defer"
    return "other"


def _describe(action: Any, obs: Any) -> dict[str, Any]:
    """What a pick is, in the numbers the listing shows."""
    if isinstance(action, Route) and obs.request is not None:
        s, k, r = action.station - 1, int(action.kind), obs.request
        return {
            "kw": float(plug_kw(k, r.max_ac_kw, r.max_dc_kw)),
            "free": int(obs.plugs[s, k] - obs.busy[s, k]),
            "queue": int(obs.queue[s, k]),
            "drive_min": float(obs.travel_min[s]),
        }
    if isinstance(action, Defer):
        return {"minutes": int(action.minutes)}
    return {}


def gap_episode(
    scenario: str, seed: int, learner: str, teacher: str, threads: int,
    adapter: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
    """One episode the learner plays; a row per decision the teacher would take
    otherwise. ``adapter``: the Oracle's LoRA GGUF (None: the shipped one).
    Picklable (``labels.episode_runs``)."""
    from evgrid_core.policies import make_policy

    kw: dict[str, Any] = {}
    if learner == "oracle":
        kw = {"threads": threads, **({"adapter": adapter} if adapter else {})}
    me, ref = make_policy(learner, **kw), make_policy(teacher)
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    me.reset(seed)
    ref.reset(seed)
    rows, ret, step, played = [], 0.0, 0, []
    while not env.done:
        a, b = (_line(p.act(obs)) for p in (me, ref))
        played.append(a)
        if a != b:
            r_a, r_b = (
                rollout(env.clone(), line, horizon_ticks=10**9,
                        continuation=teacher, seed=seed).total
                for line in (a, b)
            )  # fmt: skip
            pa, pb = parse_action(a), parse_action(b)
            rows.append({
                "scenario": scenario, "seed": seed, "step": step, "ev": env.request_id,
                "learner": a, "teacher": b, "differ_in": difference(pa, pb),
                "return_learner": r_a, "return_teacher": r_b,
                "learner_pick": _describe(pa, obs), "teacher_pick": _describe(pb, obs),
            })  # fmt: skip
        ret += env.step(a).reward
        obs = env.observation()
        step += 1
    summary = {"scenario": scenario, "seed": seed, "learner": learner,
               "teacher": teacher, "adapter": adapter_sha(learner, adapter),
               "learner_return": ret, "decisions": step,
               "disagreements": len(rows), "played": played}  # fmt: skip
    return rows, summary


def adapter_sha(learner: str, adapter: str | None) -> str | None:
    """The sha256 of the Oracle's adapter (the shipped one by default); None for
    another learner."""
    if learner != "oracle":
        return None
    from oracle.shipped import SHIPPED_ADAPTER

    from .sft_ship import sha256

    return sha256(Path(adapter or SHIPPED_ADAPTER))


def _line(a: Any) -> str:
    """A policy's answer as text: an action's form, or the text it answered (a
    policy with nothing valid to do may answer e.g. NO_STATION)."""
    return a if isinstance(a, str) else format_action(a)


# --- Labels on the learner's states ------------------------------------------------


def gap_rows(
    out_dir: Path, stations: int, style: str, teacher: Path | None = None,
    margin: float = 0.05,
) -> list[dict[str, Any]]:  # fmt: skip
    """SFT rows (``sft_rows.decision_row``) for each disagreement of the finished
    episodes in ``out_dir``, asked in ``style``: the answer is the teacher's line
    where the look-ahead scores it above the learner's by more than ``margin``,
    else the learner's own. Each state is rebuilt by replaying the learner's lines
    (the episode's ``played``); ``improved`` says which rows changed the answer."""
    from .sft_rows import decision_row

    out = []
    by_episode = defaultdict(list)
    for r in load_records(out_dir / DECISIONS_FILE):
        by_episode[r["scenario"], r["seed"]].append(r)
    for e in load_records(out_dir / EPISODES_FILE):
        if "played" not in e:
            raise ValueError(f"{out_dir}: {e['scenario']} seed {e['seed']} has no "
                             "played lines (made before they were kept): run it again")  # fmt: skip
        env = EVGridEnv()
        env.reset(seed=e["seed"], scenario=e["scenario"])
        todo = {r["step"]: r for r in by_episode[e["scenario"], e["seed"]]}
        for step, line in enumerate(e["played"]):
            r = todo.get(step)
            if r is not None:
                if env.request_id != r["ev"]:
                    raise ValueError(f"{e['scenario']} seed {e['seed']} step {step}: "
                                     "the replay reached another EV")  # fmt: skip
                better = r["return_teacher"] > r["return_learner"] + margin
                answer = r["teacher"] if better else r["learner"]
                key = {k: r[k] for k in ("scenario", "seed", "step")}
                row = decision_row(env.observation(), answer, stations, teacher,
                                   style, **key)  # fmt: skip
                out.append(row | {"improved": better})
            env.step(line)
    return out


# --- The summary ---------------------------------------------------------------------


def _mean_ci(x: list[float]) -> tuple[float, float]:
    """Mean and 95 % CI half-width (``evgrid_core.aggregate``, as the report's)."""
    a = aggregate({"x": v} for v in x).get("x")
    return (a["mean"], a["ci95"]) if a else (float("nan"), float("nan"))


def summarize(out_dir: Path) -> dict[str, Any]:
    """Per scenario: decisions and disagreements an episode, and per kind of
    disagreement how many an episode and the look-ahead's learner - teacher return
    summed over an episode (mean, 95 % CI over episodes) and per disagreement."""
    eps = load_records(out_dir / EPISODES_FILE)
    done = {(e["scenario"], e["seed"]) for e in eps}
    rows = [r for r in load_records(out_dir / DECISIONS_FILE)
            if (r["scenario"], r["seed"]) in done]  # fmt: skip
    out: dict[str, Any] = {}
    for sc in sorted({e["scenario"] for e in eps}):
        seeds = sorted(e["seed"] for e in eps if e["scenario"] == sc)
        mine = [e for e in eps if e["scenario"] == sc]
        per: dict[str, Any] = {
            "episodes": len(seeds),
            "seeds": seeds,
            "decisions": float(np.mean([e["decisions"] for e in mine])),
            "disagreements": float(np.mean([e["disagreements"] for e in mine])),
            "learner_return": _mean_ci([e["learner_return"] for e in mine]),
        }
        for k in ("all", *KINDS):
            sel = [r for r in rows if r["scenario"] == sc
                   and (k == "all" or r["differ_in"] == k)]  # fmt: skip
            diff = defaultdict(float)
            for r in sel:
                diff[r["seed"]] += r["return_learner"] - r["return_teacher"]
            d = [r["return_learner"] - r["return_teacher"] for r in sel]
            per[k] = {
                "per_episode": len(sel) / len(seeds),
                "gap_per_episode": _mean_ci([diff[s] for s in seeds]),
                "gap_per_disagreement": float(np.mean(d)) if d else 0.0,
                "learner_better": sum(x > 1e-9 for x in d),
                "teacher_better": sum(x < -1e-9 for x in d),
            }
        out[sc] = per
    return out


def report_table(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table, one row per scenario and kind."""
    lines = [
        "| scenario | differ in | an episode | learner - teacher, summed an episode "
        "| per disagreement | learner better / teacher better |",
        "|---|---|---:|---|---:|---|",
    ]
    for sc, per in summary.items():
        for k in ("all", *KINDS):
            g = per[k]
            if k != "all" and not g["per_episode"]:
                continue
            m, ci = g["gap_per_episode"]
            lines.append(
                f"| {sc} | {k} | {g['per_episode']:.1f} | {m:+.2f} ± {ci:.2f} | "
                f"{g['gap_per_disagreement']:+.3f} | "
                f"{g['learner_better']} / {g['teacher_better']} |"
            )
    return "\n".join(lines)


def _same_players(out_dir: Path, learner: str, teacher: str, sha: str | None) -> None:
    """A folder holds one learner (and adapter) against one teacher: resuming with
    others is an error."""
    for e in load_records(out_dir / EPISODES_FILE):
        if (e["learner"], e["teacher"], e["adapter"]) != (learner, teacher, sha):
            raise ValueError(
                f"{out_dir} holds {e['learner']} (adapter {e['adapter']}) against "
                f"{e['teacher']}, not {learner} (adapter {sha}) against {teacher}; "
                "give another folder or delete it"
            )


def plot(summary: dict[str, Any], path: Path) -> Path:
    """Bars: per scenario, the look-ahead's learner - teacher return summed over an
    episode for each kind of disagreement (95 % CI over episodes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios, kinds = list(summary), KINDS[:3]
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(scenarios), 3.4))
    width = 0.8 / len(kinds)
    for j, k in enumerate(kinds):
        m = [summary[sc][k]["gap_per_episode"][0] for sc in scenarios]
        ci = [summary[sc][k]["gap_per_episode"][1] for sc in scenarios]
        xs = [i + (j - 1) * width for i in range(len(scenarios))]
        ax.bar(xs, m, width, yerr=[0 if c != c else c for c in ci], capsize=3,
               label={"kind": "charger kind (same station)", "station": "station",
                      "defer": "a DEFER on either side"}[k])  # fmt: skip
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(scenarios)), scenarios, fontsize=8)
    ax.set_ylabel("learner - teacher, return an episode")
    ax.set_title("where the learner loses to its teacher (look-ahead)", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def against(out_dir: Path, other_dir: Path) -> str:
    """The learner's return here minus in ``other_dir`` (another adapter, say), on
    the (scenario, seed) episodes both hold: a Markdown table, paired per scenario
    (mean, 95 % CI, paired t-test p)."""
    from evaluation.stats import paired

    def runs(d: Path) -> dict[str, dict[int, dict[str, float]]]:
        out: dict[str, dict[int, dict[str, float]]] = defaultdict(dict)
        for e in load_records(d / EPISODES_FILE):
            out[e["scenario"]][e["seed"]] = {"return": e["learner_return"]}
        return out

    mine, theirs = runs(out_dir), runs(other_dir)
    lines = [f"| scenario | n | return here - in {other_dir.name} | p |",
             "|---|---:|---|---:|"]  # fmt: skip
    for sc in sorted(set(mine) & set(theirs)):
        d = paired(mine[sc], theirs[sc], "return")
        lines.append(f"| {sc} | {d['n']:.0f} | {d['mean_diff']:+.2f} ± "
                     f"{d.get('ci95', float('nan')):.2f} | {d.get('t_p', float('nan')):.2g} |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m training.oracle_gap",
                                description=__doc__.split("\n\n")[0])  # fmt: skip
    p.add_argument(
        "--scenarios", default="evening_peak,heatwave,festival_surge,feeder_fault"
    )
    p.add_argument("--seeds", default="50:54",
                   help="FIRST:LAST (LAST excluded); the held-out seeds are refused: "
                        "rows here are labels, and the report's seeds are for evgrid compare")  # fmt: skip
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--learner", default="oracle")
    p.add_argument("--teacher", default="distilled")
    p.add_argument(
        "--adapter", help="the Oracle's LoRA GGUF (default: the shipped one)"
    )
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="llama.cpp threads a worker")
    p.add_argument("--report", action="store_true", help="only summarise --out")
    p.add_argument("--against", type=Path,
                   help="another oracle_gap folder: the learner's return here minus there, "
                        "paired by seed")  # fmt: skip
    a = p.parse_args(argv)
    from evgrid_core.policies import make_policy

    try:
        names = check_scenarios(a.scenarios.split(","))
        seeds = parse_seeds(a.seeds)
        if a.adapter and not Path(a.adapter).is_file():
            raise ValueError(f"no adapter at {a.adapter}")
        if not a.report:
            for pol in (a.learner, a.teacher):  # unknown: an error; the Oracle's model
                # with another adapter is folded here once, not by each worker at once
                kw = {"adapter": a.adapter} if pol == "oracle" and a.adapter else {}
                make_policy(pol, **kw)
            _same_players(
                a.out, a.learner, a.teacher, adapter_sha(a.learner, a.adapter)
            )
            episode_runs(gap_episode, (a.learner, a.teacher, a.threads, a.adapter),
                         names, seeds, a.out, workers=a.workers)  # fmt: skip
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not load_records(a.out / EPISODES_FILE):
        print(f"error: no finished episode in {a.out}", file=sys.stderr)
        return 2
    summary = summarize(a.out)
    (a.out / "gap.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(summary, a.out / "gap.png")
    print(report_table(summary))
    if a.against:
        if not load_records(a.against / EPISODES_FILE):
            print(f"error: no finished episode in {a.against}", file=sys.stderr)
            return 2
        print()
        print(against(a.out, a.against))
    return 0


if __name__ == "__main__":
    sys.exit(main())
