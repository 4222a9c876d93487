"""The OpenEnv environment in-process: pure translation of the core's output."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openenv")

from evgrid_core import EVGridEnv, SimConfig  # noqa: E402
from evgrid_openenv.environment import (  # noqa: E402
    EVGridEnvironment,
    EVGridRequestError,
)
from evgrid_openenv.models import EVGridAction, EVGridObservation  # noqa: E402


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


def test_server_environment_observation_round_trips_through_json() -> None:
    # The structured view is built without validation; it must still be valid.
    env = EVGridEnvironment()
    obs = env.reset(seed=2, scenario="feeder_fault")
    again = EVGridObservation.model_validate_json(obs.model_dump_json())
    assert again == obs
    assert again.grid.request.id == 1 and len(again.grid.route_mask) == 25


def test_server_environment_errors_carry_http_status() -> None:
    env = EVGridEnvironment()
    with pytest.raises(EVGridRequestError) as e:
        env.step(EVGridAction(text="DEFER E1 5"))
    assert e.value.status == 409
    with pytest.raises(EVGridRequestError) as e:
        env.reset(scenario="atlantis")
    assert e.value.status == 422
