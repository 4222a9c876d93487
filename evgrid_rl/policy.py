"""``ppo`` and ``ppo_warm``: the RLlib PPO policies, as registered policies.

The actor's weights (``evgrid_rl/data/ppo.npz`` from scratch, ``ppo_warm.npz``
warm-started from ``distilled``; written by ``python3 -m evgrid_rl.train``) are
walked by numpy. On the candidate interface (``evgrid_gym.candidate_env``) the
actor's MLP scores each valid ROUTE and DEFER's squashed feature row
(``candidates.fixed_view``) and the best is answered (ties to the first row); an
older flat export (``ppo_gym.npz``: one logit per discrete index) takes the env's
mask instead. So ``evgrid compare --policies ppo`` and ``main.py --policy ppo`` need
neither Ray nor torch. ``weights=PATH`` loads another export
(``make_policy("ppo", weights="runs/ppo-cpu/ppo.npz")``).

Registered with the core through the ``evgrid.policies`` entry points.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import Action, Observation
from evgrid_core.candidates import Candidates, candidates, fixed_view
from evgrid_core.policies import register_policy
from evgrid_gym import action_mask, decode_action, encode_observation

SHIPPED_WEIGHTS = Path(__file__).parent / "data" / "ppo.npz"  # from scratch
SHIPPED_WARM = Path(__file__).parent / "data" / "ppo_warm.npz"  # warm-started


class ActorMLP:
    """``W0, b0, W1, b1, ...`` (torch's ``Linear`` layout: out x in): tanh between
    layers, none after the last (the logits). ``prefix`` picks one actor of a file
    holding several (``mappo.npz``: ``fleet.W0``, ``operator.W0``...)."""

    def __init__(self, path: Path, prefix: str = "") -> None:
        with np.load(path, allow_pickle=False) as z:  # plain arrays, never pickles
            n = sum(1 for k in z.files if k.startswith(f"{prefix}W"))
            self.layers = [
                (
                    z[f"{prefix}W{i}"].astype(np.float64),
                    z[f"{prefix}b{i}"].astype(np.float64),
                )
                for i in range(n)
            ]
            self.meta: dict[str, Any] = (
                json.loads(str(z["meta"])) if "meta" in z else {}
            )
        if not self.layers:
            raise ValueError(f"{path}: no layers{f' for {prefix!r}' if prefix else ''}")

    def logits(self, x: np.ndarray) -> np.ndarray:
        h = np.asarray(x, dtype=np.float64)
        for i, (W, b) in enumerate(self.layers):
            h = h @ W.T + b
            if i < len(self.layers) - 1:
                h = np.tanh(h)
        return h


def best_candidate(actor: ActorMLP, c: Candidates, k: int) -> Action:
    """The candidate whose row (``fixed_view(c, k)``) ``actor`` scores highest (ties
    to the first row)."""
    rows, mask, pick = fixed_view(c, k)
    scores = actor.logits(rows[mask])[:, 0]  # valid rows lead
    return c.actions[int(pick[int(np.argmax(scores))])]


class PPOPolicy:
    """The learnt actor's most likely valid action (deterministic). Two interfaces,
    told apart by the weights' ``meta["interface"]``: ``candidates`` (one score per
    candidate row, ``evgrid_gym.candidate_env``; the shipped one) or the flat index
    of ``EVGridGymEnv`` (older exports)."""

    name = "ppo"
    shipped = SHIPPED_WEIGHTS
    preset = "cpu-clock"

    def __init__(self, weights: str | Path | None = None) -> None:
        path = Path(weights) if weights else self.shipped
        if not path.is_file():
            raise FileNotFoundError(
                f"no PPO weights at {path}: train them with `python3 -m "
                f"evgrid_rl.train --preset {self.preset}` (needs the rl extra)"
            )
        with np.load(path, allow_pickle=False) as z:
            rows = "pi.W0" in z.files
        self.model = ActorMLP(path, prefix="pi." if rows else "")
        self.k = int(self.model.meta.get("k", 0)) if rows else 0
        if rows and self.k <= 0:
            raise ValueError(f"{path}: a candidate actor needs meta['k'] (its rows)")

    def reset(self, seed: int) -> None:
        pass

    def act(self, obs: Observation) -> Action | str:
        assert obs.request is not None, "no request to decide"
        if self.k:
            return self._act_on_candidates(obs)
        mask = action_mask(obs)
        if not mask.any():  # no station can take the EV and it cannot wait
            return "NO_STATION"  # the core's policies answer so too: it is stranded
        logits = self.model.logits(encode_observation(obs))
        logits[~mask] = -np.inf
        return decode_action(int(np.argmax(logits)), obs.request.id)

    def _act_on_candidates(self, obs: Observation) -> Action | str:
        c = candidates(obs)
        return best_candidate(self.model, c, self.k) if len(c) else "NO_STATION"


class WarmPPOPolicy(PPOPolicy):
    """``ppo``'s network warm-started from ``distilled``'s choices (preset
    ``cpu-warm``); the shipped weights are the snapshot chosen on validation seeds,
    which was the cloned start: PPO's fine-tuning did not improve on it."""

    name = "ppo_warm"
    shipped = SHIPPED_WARM
    preset = "cpu-warm"


register_policy(
    "ppo",
    PPOPolicy,
    "RLlib PPO from scratch on the candidate interface (one MLP scores each valid "
    "ROUTE / DEFER), discounted per minute, preset cpu-clock; numpy",
)
register_policy(
    "ppo_warm",
    WarmPPOPolicy,
    "ppo's network cloned from distilled (preset cpu-warm; its PPO fine-tuning "
    "did not improve on the clone, docs/rl.md); numpy",
)
