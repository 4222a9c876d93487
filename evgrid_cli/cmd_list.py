"""``evgrid list``: the policies and scenarios there are."""

from __future__ import annotations

import argparse

HELP = "list policies and scenarios"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    from evgrid_core import SCENARIOS
    from evgrid_core.policies import (
        ADVERSARIAL,
        describe_policy,
        load_plugins,
        policy_names,
    )

    adversarial = {cls.name for cls in ADVERSARIAL}
    policies = [
        {
            "name": n,
            "kind": "adversarial" if n in adversarial else "policy",
            "description": describe_policy(n),
        }
        for n in policy_names()
    ]
    skipped = [
        {"name": p.name, "module": p.module, "error": p.error}
        for p in load_plugins()
        if p.error
    ]
    scenarios = [
        {"name": s.name, "title": s.title, "start": f"{s.start_minute // 60:02d}:{s.start_minute % 60:02d}",
         "ticks": s.n_ticks, "description": s.description}
        for s in SCENARIOS.values()
    ]  # fmt: skip
    if args.json:
        import json

        out = {"policies": policies, "skipped_plugins": skipped, "scenarios": scenarios}
        print(json.dumps(out, indent=2))
        return 0
    print("Policies")
    for p in policies:
        tag = " [adversarial]" if p["kind"] == "adversarial" else ""
        print(f"  {p['name']:<22}{p['description']}{tag}")
    for p in skipped:
        print(f"  {p['name']:<22}[not loaded: {p['error']}]")
    print("\nScenarios")
    for s in scenarios:
        print(
            f"  {s['name']:<17}{s['start']}  {s['ticks']:>3} ticks  {s['description']}"
        )
    return 0
