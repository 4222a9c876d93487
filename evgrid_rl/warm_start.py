"""Warm start: the candidate scorer taught ``distilled``'s choices before PPO.

Behaviour cloning on the candidate interface: ``distilled`` plays training seeds
(``DEMO_FIRST_SEED`` on, below the held-out ones) through ``CandidateGymEnv``; each
decision gives the rows, the mask and the row ``distilled`` answered, and the
discounted (scaled) return from there on. The actor learns the rows' choice by
cross-entropy, the critic the returns by squared error, so PPO starts from a
policy near its teacher with a critic that already knows what such a policy earns.
A run warm-started this way is reported apart from one trained from scratch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from evgrid_core.candidates import candidates, fixed_view
from evgrid_core.policies import make_policy
from evgrid_gym.candidate_env import CandidateGymEnv

DEMO_FIRST_SEED = 800_000  # training seeds (< 900000), apart from RLlib's random draws


def demonstrations(
    scenarios: tuple[str, ...], episodes: int, k: int, gamma: float,
    reward_scale: float, clock: bool = False,
) -> dict[str, np.ndarray]:  # fmt: skip
    """``episodes`` per scenario of ``distilled``: rows (N, k, F), mask (N, k), state
    (N, OBS_SIZE), target (N,) the chosen row, ret (N,) the discounted scaled return
    (``gamma`` per decision, or with ``clock`` per minute between decisions, as
    ``clock_gae``), episode (N,)."""
    out: dict[str, list[Any]] = {
        "rows": [],
        "mask": [],
        "state": [],
        "target": [],
        "ret": [],
        "episode": [],
    }
    n_ep = 0
    env, teacher = CandidateGymEnv(k=k), make_policy("distilled")
    for sc in scenarios:
        for seed in range(DEMO_FIRST_SEED, DEMO_FIRST_SEED + episodes):
            obs, _ = env.reset(seed=seed, options={"scenario": sc})
            teacher.reset(seed)
            rewards, minutes, done = [], [], False
            while not done:
                minutes.append(env.core.world.minute)
                inner = env.core.observation()
                c = candidates(inner)
                _, _, pick = fixed_view(c, k)
                row = int(
                    np.flatnonzero(pick == c.actions.index(teacher.act(inner)))[0]
                )
                out["rows"].append(obs["candidates"])
                out["mask"].append(obs["action_mask"])
                out["state"].append(obs["state"])
                out["target"].append(row)
                out["episode"].append(n_ep)
                obs, reward, done, _, _ = env.step(row)
                rewards.append(reward * reward_scale)
            minutes.append(env.core.world.minute)
            disc = gamma ** np.diff(minutes) if clock else np.full(len(rewards), gamma)
            ret, acc = np.zeros(len(rewards)), 0.0
            for t in range(len(rewards) - 1, -1, -1):
                acc = rewards[t] + disc[t] * acc
                ret[t] = acc
            out["ret"] += ret.tolist()
            n_ep += 1
    return {
        "rows": np.stack(out["rows"]).astype(np.float32),
        "mask": np.stack(out["mask"]).astype(np.float32),
        "state": np.stack(out["state"]).astype(np.float32),
        "target": np.asarray(out["target"], dtype=np.int64),
        "ret": np.asarray(out["ret"], dtype=np.float32),
        "episode": np.asarray(out["episode"], dtype=np.int64),
    }


def fit(
    module: Any, demos: dict[str, np.ndarray], epochs: int, lr: float = 1e-3,
    batch: int = 512, seed: int = 0,
) -> dict[str, float]:  # fmt: skip
    """Train ``module`` (a ``CandidateScorerModule``) on ``demos``; the last tenth of
    the episodes are held out. Returns the held-out agreement with the teacher and
    the critic's held-out RMSE."""
    rng = np.random.default_rng(seed)
    held = demos["episode"] >= int(np.ceil(demos["episode"].max() * 0.9))
    train_idx, test_idx = np.flatnonzero(~held), np.flatnonzero(held)
    t = {k: torch.from_numpy(v) for k, v in demos.items()}
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    torch.manual_seed(seed)
    for _ in range(epochs):
        for start in range(0, len(train_idx), batch):
            idx = torch.from_numpy(rng.permutation(train_idx)[start : start + batch])
            obs = {"candidates": t["rows"][idx], "action_mask": t["mask"][idx],
                   "state": t["state"][idx]}  # fmt: skip
            logits = module.forward_train({"obs": obs})["action_dist_inputs"]
            values = module.compute_values({"obs": obs})
            loss = torch.nn.functional.cross_entropy(logits, t["target"][idx])
            loss = loss + 0.5 * torch.mean((values - t["ret"][idx]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        idx = torch.from_numpy(test_idx)
        obs = {"candidates": t["rows"][idx], "action_mask": t["mask"][idx],
               "state": t["state"][idx]}  # fmt: skip
        pick = module.forward_inference({"obs": obs})["action_dist_inputs"].argmax(-1)
        values = module.compute_values({"obs": obs})
    return {
        "bc_agreement": float((pick == t["target"][idx]).float().mean()),
        "bc_value_rmse": float(torch.sqrt(torch.mean((values - t["ret"][idx]) ** 2))),
        "bc_decisions": float(len(train_idx)),
    }
