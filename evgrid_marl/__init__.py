"""The core as a PettingZoo multi-agent env: fleet and station operators.

Importing this package needs pettingzoo (``pip install 'ev-grid-oracle[marl]'``).
``EVGridParallelEnv`` is the ``ParallelEnv``; ``aec_env`` the same env turn by turn
(PettingZoo's own conversion: the agents answer one after another, then the
parallel step runs).
"""

from .agents import Roster, make_roster
from .attribution import attribute, split
from .env import (
    FLEET_NOOP,
    N_FLEET_ACTIONS,
    N_OPERATOR_ACTIONS,
    AgentView,
    EVGridParallelEnv,
)


def parallel_env(**kwargs):  # noqa: ANN003, ANN201 - PettingZoo's naming
    """``EVGridParallelEnv(**kwargs)``."""
    return EVGridParallelEnv(**kwargs)


def aec_env(**kwargs):  # noqa: ANN003, ANN201
    """The same env as a PettingZoo ``AECEnv`` (``parallel_to_aec``)."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(EVGridParallelEnv(**kwargs))


__all__ = [
    "FLEET_NOOP",
    "AgentView",
    "N_FLEET_ACTIONS",
    "N_OPERATOR_ACTIONS",
    "EVGridParallelEnv",
    "Roster",
    "aec_env",
    "attribute",
    "make_roster",
    "parallel_env",
    "split",
]
