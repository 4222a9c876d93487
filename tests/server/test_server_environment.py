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


def test_the_network_fields_are_sent_only_under_a_network_grid_model() -> None:
    # feeder_sum: null, so the default wire form carries no new numbers;
    # lindistflow: the core's worst voltage per feeder and DT loading per station,
    # and the network reward parts in the breakdown.
    plain = EVGridEnvironment().reset(seed=1)
    assert plain.grid.feeder_min_voltage_pu is None
    assert plain.grid.station_transformer_loading is None
    config = SimConfig(grid="lindistflow")
    env, core = EVGridEnvironment(config), EVGridEnv(config)
    obs = env.reset(seed=1)
    core.reset(seed=1)
    step = env.step(EVGridAction(text="DEFER E1 5"))
    core.step("DEFER E1 5")
    want = core.observation()
    assert step.grid.feeder_min_voltage_pu == want.feeder_min_voltage_pu.tolist()
    assert step.grid.station_transformer_loading == (
        want.station_transformer_loading.tolist()
    )
    assert len(step.grid.feeder_min_voltage_pu) == 6
    assert "undervoltage" in step.reward_parts.model_dump()
    assert obs.prompt.count("VOLTS lowest p.u.") == 1


def test_server_environment_errors_carry_http_status() -> None:
    env = EVGridEnvironment()
    with pytest.raises(EVGridRequestError) as e:
        env.step(EVGridAction(text="DEFER E1 5"))
    assert e.value.status == 409
    with pytest.raises(EVGridRequestError) as e:
        env.reset(scenario="atlantis")
    assert e.value.status == 422
