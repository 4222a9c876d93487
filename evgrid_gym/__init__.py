"""The Gymnasium wrapper over the core: ``EVGridGymEnv`` with action masks.

Importing this package needs gymnasium (``pip install 'ev-grid-oracle[gym]'``); it
registers nothing with Gymnasium: build the env directly, ``EVGridGymEnv(scenario)``,
or a batch of them stepped in one compiled call, ``EVGridVectorEnv(num_envs)``.
"""

from .env import (
    N_ACTIONS,
    OBS_SIZE,
    EVGridGymEnv,
    action_mask,
    decode_action,
    encode_observation,
)
from .vector import EVGridVectorEnv

__all__ = [
    "N_ACTIONS",
    "OBS_SIZE",
    "EVGridGymEnv",
    "EVGridVectorEnv",
    "action_mask",
    "decode_action",
    "encode_observation",
]
