"""``ppo``: the RLlib PPO policy learnt on the Gymnasium env, as a registered policy.

The actor's weights (``evgrid_rl/data/ppo_gym.npz``, written by
``python3 -m evgrid_rl.train``) are walked by numpy: the encoder's tanh layers,
then the policy head's logits; the valid actions only (the env's mask), the best
answered (ties to the first). So ``evgrid compare --policies ppo`` and
``main.py --policy ppo`` need neither Ray nor torch. ``weights=PATH`` loads another
export (``make_policy("ppo", weights="runs/ppo/ppo_gym.npz")``).

Registered with the core as ``"ppo"`` through the ``evgrid.policies`` entry points.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import Action, Observation
from evgrid_core.policies import register_policy
from evgrid_gym import action_mask, decode_action, encode_observation

SHIPPED_WEIGHTS = Path(__file__).parent / "data" / "ppo_gym.npz"


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


class PPOPolicy:
    """The learnt actor's most likely valid action (deterministic)."""

    name = "ppo"

    def __init__(self, weights: str | Path | None = None) -> None:
        path = Path(weights) if weights else SHIPPED_WEIGHTS
        if not path.is_file():
            raise FileNotFoundError(
                f"no PPO weights at {path}: train them with "
                "`python3 -m evgrid_rl.train --preset cpu-small` (needs the rl extra)"
            )
        self.model = ActorMLP(path)

    def reset(self, seed: int) -> None:
        pass

    def act(self, obs: Observation) -> Action | str:
        assert obs.request is not None, "no request to decide"
        mask = action_mask(obs)
        if not mask.any():  # no station can take the EV and it cannot wait
            return "NO_STATION"  # the core's policies answer so too: it is stranded
        logits = self.model.logits(encode_observation(obs))
        logits[~mask] = -np.inf
        return decode_action(int(np.argmax(logits)), obs.request.id)


register_policy(
    "ppo",
    PPOPolicy,
    "RLlib PPO with action masking on the Gymnasium env (cpu-small preset), numpy",
)
