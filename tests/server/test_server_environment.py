"""The OpenEnv environment in-process: pure translation of the core's output.

Its speed shortcuts (``evgrid_openenv/fast.py``) are checked in test_server_fast.py.
"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openenv")

from evgrid_core import EVGridEnv, SimConfig  # noqa: E402
from evgrid_openenv.environment import (  # noqa: E402
    EVGridEnvironment,
    EVGridRequestError,
)
from evgrid_openenv.models import EVGridAction  # noqa: E402


def test_server_environment_follows_a_non_default_config() -> None:
    # obs_stations=3: the prompt lists 3 stations, exactly as the core renders it.
    config = SimConfig(obs_stations=3)
    env, core = EVGridEnvironment(config), EVGridEnv(config)
    obs = env.reset(seed=1)
    core.reset(seed=1)
    assert obs.prompt == core.render_text()
    assert len(re.findall(r"^S\d+ ", obs.prompt, flags=re.M)) == 3
    step = env.step(EVGridAction(text="DEFER E1 5"))
    assert step.prompt == (core.step("DEFER E1 5"), core.render_text())[1]


def test_server_environment_errors_carry_http_status() -> None:
    env = EVGridEnvironment()
    with pytest.raises(EVGridRequestError) as e:
        env.step(EVGridAction(text="DEFER E1 5"))
    assert e.value.status == 409
    with pytest.raises(EVGridRequestError) as e:
        env.reset(scenario="atlantis")
    assert e.value.status == 422
