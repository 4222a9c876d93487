"""The trained actors out of RLlib, as plain arrays the numpy policies walk.

``export`` writes what ``ppo`` (``evgrid_rl.policy``) and ``mappo``
(``evgrid_rl.mappo``) load: each actor's layers in torch's ``Linear`` layout and a
JSON ``meta`` (the preset, the interface, the iterations and env steps behind it);
``snapshot`` keeps a copy per held-out check, for ``evgrid_rl.validate`` to choose
among.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from .presets import Preset, modules_of


def _actor_arrays(module: Any, prefix: str = "") -> tuple[dict[str, np.ndarray], list]:
    """The actor's layers (its encoder's MLP, then the pi head; torch's ``Linear``
    layout) as ``{prefix}W0, {prefix}b0, ...``, and the module's names for them."""
    state = module.state_dict()
    actor = ("encoder.actor_encoder.", "encoder.encoder.", "pi.")  # own or shared
    keys = [k for k in state if k.startswith(actor) and k.endswith(".weight")]
    arrays: dict[str, np.ndarray] = {}
    for i, k in enumerate(keys):
        bias = k[: -len("weight")] + "bias"
        arrays[f"{prefix}W{i}"] = state[k].detach().cpu().numpy().astype(np.float32)
        arrays[f"{prefix}b{i}"] = state[bias].detach().cpu().numpy().astype(np.float32)
    return arrays, keys


def export_actor(module: Any, path: Path, meta: dict[str, Any]) -> None:
    """One actor as ``W0, b0, W1, ...`` and ``meta`` (JSON), for ``evgrid_rl.policy``:
    plain arrays, ``np.load(allow_pickle=False)`` reads them."""
    arrays, keys = _actor_arrays(module)
    arrays["meta"] = np.array(json.dumps({**meta, "layers": keys}))
    np.savez_compressed(path, **arrays)


def export_actors(
    modules: dict[str, Any], module_of: dict[str, str], path: Path, meta: dict[str, Any]
) -> None:
    """Several actors (multi-agent) as ``{module}.W0, {module}.b0, ...`` and ``meta``
    with ``module_of`` (agent -> module), for ``evgrid_rl.mappo``."""
    arrays: dict[str, np.ndarray] = {}
    layers = {}
    for mid, module in sorted(modules.items()):
        a, layers[mid] = _actor_arrays(module, f"{mid}.")
        arrays.update(a)
    full = {**meta, "module_of": module_of, "layers": layers}
    arrays["meta"] = np.array(json.dumps(full))
    np.savez_compressed(path, **arrays)


def export(
    algo: Any, preset: Preset, out: Path, iteration: int, steps: float, seconds: float
) -> Path:
    """The actors as plain arrays (what the ``ppo`` / ``mappo`` policies load)."""
    meta = {
        "preset": preset.name,
        "interface": preset.env,
        "hidden": list(preset.hidden),
        "iterations": iteration,
        "env_steps": steps,
        "seed": preset.seed,
        "seconds": seconds,
    }
    if preset.env == "candidates":
        from evgrid_gym.candidate_env import K_DEFAULT

        from .candidate_module import export_arrays

        arrays = export_arrays(algo.get_module())
        arrays["meta"] = np.array(json.dumps({**meta, "k": K_DEFAULT}))
        path = out / "ppo.npz"
        np.savez_compressed(path, **arrays)
        return path
    if preset.env == "gym":
        export_actor(algo.get_module(), out / "ppo_gym.npz", meta)
        return out / "ppo_gym.npz"
    module_of = modules_of(preset)
    if preset.env == "marl-candidates":
        from evgrid_gym.candidate_env import K_DEFAULT

        from .candidate_marl import CandidateMultiAgentEnv
        from .candidate_module import export_arrays

        arrays = {}
        for m in sorted(set(module_of.values())):
            arrays.update({f"{m}.{k}": v for k, v in
                           export_arrays(algo.get_module(m)).items()})  # fmt: skip
        k_op = CandidateMultiAgentEnv().k_op
        arrays["meta"] = np.array(json.dumps({
            **meta, "k": K_DEFAULT, "k_op": k_op, "module_of": module_of,
            "roles": "both", "policies": preset.policies}))  # fmt: skip
        np.savez_compressed(out / "mappo.npz", **arrays)
        return out / "mappo.npz"
    export_actors(
        {m: algo.get_module(m) for m in set(module_of.values())},
        module_of,
        out / "mappo.npz",
        {**meta, "roles": "both", "policies": preset.policies},
    )
    return out / "mappo.npz"


def snapshot(weights: Path, iteration: int) -> Path:
    """A copy of the actors as they were at a check (``snapshots/NAME_itN.npz``), for
    choosing among them on more validation seeds afterwards (``evgrid_rl.validate``)."""
    folder = weights.parent / "snapshots"
    folder.mkdir(exist_ok=True)
    path = folder / f"{weights.stem}_it{iteration}.npz"
    shutil.copyfile(weights, path)
    return path
