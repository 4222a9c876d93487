"""The RLlib module of the candidate interface: one network scores every candidate row.

The actor is a small MLP applied to each row of ``CandidateGymEnv``'s observation
with the same weights (tanh layers, then one logit per row); masked rows get the
float minimum, so PPO's categorical never samples them. The critic encodes the
rows with its own MLP of the same shape, pools them over the valid rows (mean and
max), adds an MLP of the city's flat vector (``state``: queues, plugs and feeders
everywhere, which the rows do not show) and maps that to one value. Neither
depends on the rows' order, so index i means "the i-th candidate", never a station.

The actor's layers export as plain arrays (``export_arrays``) that
``evgrid_rl.policy`` walks with numpy: ``pi.W0, pi.b0, ...`` in torch's ``Linear``
layout, the last layer the logit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.torch_utils import FLOAT_MIN
from torch import nn


def _mlp(sizes: list[int], last_activation: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_activation:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class CandidateScorerModule(TorchRLModule, ValueFunctionAPI):
    """``model_config``: ``hidden`` (the row MLP's widths, default [64, 64]),
    ``critic_state`` (whether the critic reads the city's vector, default True)."""

    def setup(self) -> None:
        n_features = int(self.observation_space["candidates"].shape[-1])
        hidden = [int(h) for h in (self.model_config or {}).get("hidden", [64, 64])]
        self.pi = _mlp([n_features, *hidden, 1], last_activation=False)
        self.critic_state = bool((self.model_config or {}).get("critic_state", True))
        self.vf_rows = _mlp([n_features, *hidden], last_activation=True)
        pooled = 2 * hidden[-1]
        if self.critic_state:
            n_state = int(self.observation_space["state"].shape[-1])
            self.vf_state = _mlp([n_state, *hidden], last_activation=True)
            pooled += hidden[-1]
        self.vf_head = _mlp([pooled, hidden[-1], 1], last_activation=False)

    # Only the valid rows go through the MLPs (about half of the K are padding).
    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        x, valid = obs["candidates"], obs["action_mask"] > 0.5  # (B, K, F), (B, K)
        logits = torch.full(valid.shape, FLOAT_MIN, dtype=x.dtype, device=x.device)
        logits[valid] = self.pi(x[valid]).squeeze(-1)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def compute_values(
        self, batch: dict[str, Any], embeddings: Any | None = None
    ) -> torch.Tensor:
        obs = batch[Columns.OBS]
        x, valid = obs["candidates"], obs["action_mask"] > 0.5
        e = self.vf_rows(x[valid])  # (valid rows, H)
        row_of = valid.nonzero()[:, 0]  # each valid row's batch index
        shape = (x.shape[0], e.shape[1])
        total = torch.zeros(shape, dtype=e.dtype, device=e.device).index_add(
            0, row_of, e
        )
        mean = total / valid.sum(dim=1, keepdim=True).clamp(min=1)
        top = torch.full(shape, -1.0, dtype=e.dtype, device=e.device).scatter_reduce(
            0, row_of[:, None].expand_as(e), e, reduce="amax"
        )  # tanh >= -1: a batch row with no valid row pools to -1
        parts = [mean, top]
        if self.critic_state:
            parts.append(self.vf_state(obs["state"]))
        return self.vf_head(torch.cat(parts, dim=-1)).squeeze(-1)


def export_arrays(module: CandidateScorerModule) -> dict[str, np.ndarray]:
    """The actor's layers as ``pi.W0, pi.b0, ...`` (float32, torch's layout)."""
    linears = [m for m in module.pi if isinstance(m, nn.Linear)]
    out: dict[str, np.ndarray] = {}
    for i, lin in enumerate(linears):
        out[f"pi.W{i}"] = lin.weight.detach().cpu().numpy().astype(np.float32)
        out[f"pi.b{i}"] = lin.bias.detach().cpu().numpy().astype(np.float32)
    return out
