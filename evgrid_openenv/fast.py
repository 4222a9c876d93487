"""The server's and client's speed shortcuts, in one place.

Each skips a step of pydantic's or Python's plain path where this package already
knows the answer, and each is checked against that plain path in
``tests/server/test_server_fast.py``. Elsewhere the plain path reads as the rule:
the wire models (``models.py``) are plain pydantic.

``unvalidated(model, values)``
    A model holding values this package typed itself, without validation (the
    server builds four per step from the core's output, the client four per frame
    it takes as sent). What ``model_construct`` sets, without its walk over every
    field in Python: a third of its cost. Safe for these plain models only: no
    private attributes, no extra fields, no ``model_post_init``, not a root model.
    Guards: ``test_server_models_built_unvalidated_are_plain``,
    ``test_server_environment_observation_round_trips_through_json``.

``observation_frame(obs)``
    OpenEnv's ``serialize_observation`` (what a step or reset answers), the
    observation's dict written out: every value is already a plain str, number,
    bool, None or list of them (the grid's lists come from the core), so they are
    handed over as they are, where pydantic would copy some 600 values first. The
    same dict as OpenEnv's, key order included; with metadata, or no grid, it is
    OpenEnv's own. Guard: ``test_server_observation_frame_equals_openenvs``.

``observation_as_sent(payload)``
    The client takes an observation frame whose fields are exactly the ones these
    models write as it is, without validating its ~600 values again: that was half
    of the client's parse. A frame with a missing or unknown field (another version
    of the server) is validated in full, which names the problem. Guards:
    ``test_server_client_takes_the_servers_observation_as_sent``,
    ``test_server_client_validates_a_frame_whose_fields_differ``.

``freeze_startup_objects()``
    ``gc.freeze`` when the server starts: what start-up built (FastAPI, OpenEnv,
    pydantic schemas: some 250,000 objects) lives as long as the server, so out of
    the collector's sight a full collection no longer walks it: 0.17 s each, about
    2 % of the server's CPU under ``bench/server_load.py``. Safe: frozen objects are
    only never collected, and these would never be; what is made later is
    collected as before. Guard: ``test_server_freezes_startup_objects_only``.
"""

from __future__ import annotations

import gc
from typing import Any, TypeVar

from openenv.core.env_server.serialization import serialize_observation
from pydantic import BaseModel

from .models import EVGridObservation, EVRequestView, GridView, RewardParts

ModelT = TypeVar("ModelT", bound=BaseModel)
_set = object.__setattr__


# --- Models without validation ------------------------------------------------------


def unvalidated(model: type[ModelT], values: dict[str, Any]) -> ModelT:
    """``model`` holding ``values`` as given, for data these models already typed.

    ``values`` names every field, in field order (tests check the result equals
    pydantic's validation of the same data).
    """
    obj = model.__new__(model)
    _set(obj, "__dict__", values)
    _set(obj, "__pydantic_fields_set__", set(values))
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


# --- Server: the observation frame --------------------------------------------------


def observation_frame(obs: EVGridObservation) -> dict[str, Any]:
    """OpenEnv's ``serialize_observation(obs)``, the observation's dict written out."""
    if obs.grid is None or obs.metadata:
        return serialize_observation(obs)
    grid = obs.grid.__dict__
    request = grid["request"]
    return {
        "observation": {  # EVGridObservation's field order, less reward and done
            "metadata": {},
            "prompt": obs.prompt,
            "grid": {
                **grid,
                "request": None if request is None else dict(request.__dict__),
            },
            "reward_parts": dict(obs.reward_parts.__dict__),
            "valid": obs.valid,
            "reason": obs.reason,
            "action": obs.action,
            "ev": obs.ev,
            "tick": obs.tick,
        },
        "reward": obs.reward,
        "done": obs.done,
    }


# --- Client: a frame taken as sent --------------------------------------------------

# The fields the server writes: the observation's own (OpenEnv sends reward and done
# beside it), the grid's, the request's and the reward parts'.
_SENT_KEYS = frozenset(EVGridObservation.model_fields) - {"reward", "done"}
_GRID_KEYS = frozenset(GridView.model_fields)
_REQUEST_KEYS = frozenset(EVRequestView.model_fields)
_PARTS_KEYS = frozenset(RewardParts.model_fields)


def observation_as_sent(payload: dict[str, Any]) -> EVGridObservation | None:
    """The payload's observation taken as is, or None when its fields differ."""
    obs = payload.get("observation")
    if not isinstance(obs, dict) or obs.keys() != _SENT_KEYS:
        return None
    grid, parts = obs["grid"], obs["reward_parts"]
    if not isinstance(parts, dict) or parts.keys() != _PARTS_KEYS:
        return None
    if grid is not None:
        if not isinstance(grid, dict) or grid.keys() != _GRID_KEYS:
            return None
        request = grid["request"]
        if request is not None:
            if not isinstance(request, dict) or request.keys() != _REQUEST_KEYS:
                return None
            request = unvalidated(EVRequestView, request)
        grid = unvalidated(GridView, {**grid, "request": request})
    return unvalidated(
        EVGridObservation,
        {  # in field order, as unvalidated() needs
            "done": payload.get("done", False),
            "reward": payload.get("reward"),
            **obs,
            "grid": grid,
            "reward_parts": unvalidated(RewardParts, parts),
        },
    )


# --- Server: start-up objects out of the collector's sight --------------------------


def freeze_startup_objects() -> None:
    """``gc.freeze()``: run once the app is built, as the server starts."""
    gc.freeze()
