"""Guards of the server's and client's speed shortcuts (``evgrid_openenv/fast.py``).

Each shortcut is compared with the plain path it skips: pydantic's validation,
OpenEnv's own ``serialize_observation``, the collector without ``gc.freeze``.
"""

from __future__ import annotations

import gc
import weakref

import pytest

pytest.importorskip("openenv")

from openenv.core.env_server.serialization import serialize_observation  # noqa: E402
from pydantic import BaseModel, ValidationError  # noqa: E402
from pydantic_core import from_json, to_json  # noqa: E402

from evgrid_core import EVGridEnv, format_action  # noqa: E402
from evgrid_core.policies import make_policy  # noqa: E402
from evgrid_openenv.app import build_app  # noqa: E402
from evgrid_openenv.client import EVGridClient  # noqa: E402
from evgrid_openenv.environment import EVGridEnvironment  # noqa: E402
from evgrid_openenv.fast import (  # noqa: E402
    freeze_startup_objects,
    observation_as_sent,
    observation_frame,
)
from evgrid_openenv.models import (  # noqa: E402
    EVGridAction,
    EVGridObservation,
    EVRequestView,
    GridView,
    RewardParts,
)


def _payloads(scenario: str, policy: str) -> list:
    """Every observation of an episode with its frame as the client receives it."""
    env, core = EVGridEnvironment(), EVGridEnv()
    obs = env.reset(seed=5, scenario=scenario)
    view = core.reset(seed=5, scenario=scenario)
    p = make_policy(policy)
    p.reset(5)
    out = [(obs, from_json(to_json(observation_frame(obs))))]
    while not obs.done:
        action = p.act(view)
        line = action if isinstance(action, str) else format_action(action)
        core.step(line)
        view = core.observation()
        obs = env.step(EVGridAction(text=line))
        out.append((obs, from_json(to_json(observation_frame(obs)))))
    return out


# --- unvalidated ---------------------------------------------------------------------


def test_server_models_built_unvalidated_are_plain() -> None:
    # unvalidated() sets what model_construct would, which is all these need: no
    # private attributes, no extra fields, no post-init hook, not a root model.
    for model in (EVGridObservation, GridView, EVRequestView, RewardParts):
        assert not model.__private_attributes__, model
        assert model.model_config.get("extra") == "forbid", model
        assert not model.__pydantic_post_init__, model
        assert not model.__pydantic_root_model__, model


def test_server_environment_observation_round_trips_through_json() -> None:
    # The structured view is built without validation; it must still be valid.
    env = EVGridEnvironment()
    obs = env.reset(seed=2, scenario="feeder_fault")
    again = EVGridObservation.model_validate_json(obs.model_dump_json())
    assert again == obs
    assert again.grid.request.id == 1 and len(again.grid.route_mask) == 25


# --- observation_frame ---------------------------------------------------------------


def test_server_observation_frame_equals_openenvs() -> None:
    # The grid's lists handed over as they are: the same dict, the same key order,
    # the same JSON as OpenEnv's serialize_observation (pydantic's own dump).
    assert EVGridObservation.model_dump is BaseModel.model_dump  # the models are plain
    for sent, _ in _payloads("heatwave", "random_valid"):
        fast, plain = observation_frame(sent), serialize_observation(sent)
        assert fast == plain and to_json(fast) == to_json(plain)
    # With metadata, or without a grid, the frame is OpenEnv's own.
    for obs in (sent.model_copy(update={"metadata": {"note": 1}}), EVGridObservation()):
        assert observation_frame(obs) == serialize_observation(obs)
        assert to_json(observation_frame(obs)) == to_json(serialize_observation(obs))


# --- observation_as_sent --------------------------------------------------------------


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


# --- freeze_startup_objects -------------------------------------------------------------


class _Node:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_server_freezes_startup_objects_only() -> None:
    assert freeze_startup_objects in build_app().router.on_startup
    before = gc.get_freeze_count()
    try:
        freeze_startup_objects()
        assert gc.get_freeze_count() > before  # start-up's objects are out of sight
        # What is made afterwards (sessions, episodes) is collected as before.
        later = _Node()
        gone = weakref.ref(later)
        del later
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
