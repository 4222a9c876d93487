"""The OpenEnv environment in-process: pure translation of the core's output."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openenv")

from openenv.core.env_server.serialization import serialize_observation  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402
from pydantic_core import from_json, to_json  # noqa: E402

from evgrid_core import EVGridEnv, SimConfig, format_action  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_openenv.client import EVGridClient, observation_as_sent  # noqa: E402
from evgrid_openenv.environment import (  # noqa: E402
    EVGridEnvironment,
    EVGridRequestError,
)
from evgrid_openenv.models import (  # noqa: E402
    EVGridAction,
    EVGridObservation,
    EVRequestView,
    GridView,
    RewardParts,
)


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


def _payloads(scenario: str, policy: str) -> list:
    """Every observation of an episode as the client receives it (JSON round trip)."""
    env, core = EVGridEnvironment(), EVGridEnv()
    obs = env.reset(seed=5, scenario=scenario)
    view = core.reset(seed=5, scenario=scenario)
    p = make_policy(policy)
    p.reset(5)
    out = [(obs, from_json(to_json(serialize_observation(obs))))]
    while not obs.done:
        action = p.act(view)
        line = action if isinstance(action, str) else format_action(action)
        core.step(line)
        view = core.observation()
        obs = env.step(EVGridAction(text=line))
        out.append((obs, from_json(to_json(serialize_observation(obs)))))
    return out


@pytest.mark.parametrize(
    ("scenario", "policy"),
    [("evening_peak", "greedy_eta"), ("feeder_fault", "load_shift_spam")],
)
def test_server_client_takes_the_servers_observation_as_sent(
    scenario: str, policy: str
) -> None:
    # Not validated again, yet equal to the validated one and to the server's own.
    for sent, payload in _payloads(scenario, policy):
        taken = observation_as_sent(payload)
        validated = EVGridObservation.model_validate(
            {
                **payload["observation"],
                "reward": payload["reward"],
                "done": payload["done"],
            }
        )
        assert taken == validated == sent
        # Same JSON, byte for byte: same types, same field order as pydantic's.
        assert taken.model_dump_json() == validated.model_dump_json()
        assert sent.model_dump_json() == validated.model_dump_json()


def test_server_observation_dump_for_openenv_equals_pydantics() -> None:
    # OpenEnv's per-step dump takes the grid's lists as they are: same dict, same
    # key order, same frame as pydantic's own dump.
    for sent, _ in _payloads("heatwave", "random_valid"):
        fast = serialize_observation(sent)["observation"]
        slow = BaseModel.model_dump(sent, exclude={"reward", "done"})
        assert fast == slow and to_json(fast) == to_json(slow)
    # Every other call is pydantic's own.
    assert sent.model_dump() == BaseModel.model_dump(sent)
    assert sent.model_dump(exclude={"done"}) == BaseModel.model_dump(
        sent, exclude={"done"}
    )


@pytest.mark.parametrize(
    ("where", "change", "words"),
    [
        # a field this client does not know (another version of the server)
        ("grid", lambda d: d.update(surge=1), "grid.surge"),
        ("request", lambda d: d.update(colour="red"), "grid.request.colour"),
        ("parts", lambda d: d.update(bonus=1.0), "reward_parts.bonus"),
        ("observation", lambda d: d.update(hint=""), "hint"),
        # a field missing
        ("grid", lambda d: d.pop("busy"), "grid.busy"),
    ],
)
def test_server_client_validates_a_frame_whose_fields_differ(
    where, change, words
) -> None:
    _, payload = _payloads("evening_peak", "greedy_eta")[1]
    obs = payload["observation"]
    target = {
        "observation": obs,
        "grid": obs["grid"],
        "request": obs["grid"]["request"],
        "parts": obs["reward_parts"],
    }[where]
    change(target)
    assert observation_as_sent(payload) is None
    with pytest.raises(ValidationError) as e:
        EVGridClient("http://127.0.0.1:9")._parse_result(payload)
    locs = [".".join(str(p) for p in err["loc"]) for err in e.value.errors()]
    assert words in locs, locs


def test_server_models_built_unvalidated_are_plain() -> None:
    # unvalidated() sets what model_construct would, which is all these need: no
    # private attributes, no extra fields, no post-init hook, not a root model.
    for model in (EVGridObservation, GridView, EVRequestView, RewardParts):
        assert not model.__private_attributes__, model
        assert model.model_config.get("extra") == "forbid", model
        assert not model.__pydantic_post_init__, model
        assert not model.__pydantic_root_model__, model
