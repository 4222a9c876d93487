"""Bad input never kills a session or the server: each gets an error naming it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

pytest.importorskip("openenv")

from evgrid_core import EVGridEnv  # noqa: E402
from evgrid_openenv.client import EVGridClient, EVGridServerError  # noqa: E402

# (payload sent as the action, error code, words the message must contain): each a
# payload that is not an action at all, so no step happens and nothing is paid.
BAD_ACTIONS = [
    # unknown field: the wire models forbid extras
    (
        {"text": "DEFER E1 5", "priority": 1},
        "VALIDATION_ERROR",
        "priority: Extra inputs",
    ),
    # wrong JSON type for the text line
    ({"text": 5}, "VALIDATION_ERROR", "text: Input should be a valid string"),
    # ids are JSON integers, not strings (strict: no silent coercion)
    (
        {"command": "DEFER", "ev": "1", "minutes": 5},
        "VALIDATION_ERROR",
        "ev: Input should be a valid integer",
    ),
    # booleans are not ids either
    (
        {"command": "DEFER", "ev": True, "minutes": 5},
        "VALIDATION_ERROR",
        "ev: Input should be a valid integer",
    ),
    # unknown charger kind in the typed form
    (
        {"command": "ROUTE", "ev": 1, "station": 1, "charger": "TURBO"},
        "VALIDATION_ERROR",
        "charger: Input should be",
    ),
    # unknown command
    ({"command": "CHARGE", "ev": 1}, "VALIDATION_ERROR", "command: Input should be"),
    # both forms at once: ambiguous
    (
        {"text": "DEFER E1 5", "ev": 1},
        "VALIDATION_ERROR",
        "either text or the typed fields",
    ),
    # neither form
    ({}, "VALIDATION_ERROR", "needs either 'text'"),
    # typed form missing a field
    (
        {"command": "ROUTE", "ev": 1, "station": 2},
        "VALIDATION_ERROR",
        "missing charger",
    ),
    # typed form with a field its command does not take
    (
        {"command": "DEFER", "ev": 1, "minutes": 5, "station": 2},
        "VALIDATION_ERROR",
        "station not used by DEFER",
    ),
]


@pytest.fixture()
def client(server_url: str):
    with EVGridClient(server_url).sync() as c:
        yield c


def test_server_step_before_reset_is_refused_and_session_goes_on(client) -> None:
    with pytest.raises(EVGridServerError, match="no episode: send reset first") as e:
        client.step("DEFER E1 5")
    assert e.value.code == "EXECUTION_ERROR"
    assert client.state().scenario is None
    assert client.reset(seed=1).observation.grid.request.id == 1


@pytest.mark.parametrize(("payload", "code", "words"), BAD_ACTIONS)
def test_server_bad_action_payload_gets_its_error(client, payload, code, words) -> None:
    client.reset(seed=2)
    with pytest.raises(EVGridServerError) as e:
        client.step(payload)
    assert e.value.code == code
    assert words in str(e.value)
    # Nothing was stepped, and the session still plays.
    assert client.state().step_count == 0
    assert client.step("DEFER E1 5").observation.valid is not None
    assert client.state().step_count == 1


def test_server_unparsable_text_is_an_invalid_step_not_an_error(client) -> None:
    env = EVGridEnv()
    env.reset(seed=4)
    expected = env.step("route e1 s1 fast please")
    client.reset(seed=4)
    res = client.step("route e1 s1 fast please")
    assert res.observation.valid is False
    assert res.observation.reason == expected.info["reason"] != ""
    assert res.reward == pytest.approx(expected.reward)
    assert res.observation.reward_parts.invalid < 0


def test_server_step_after_the_end_is_refused_until_reset(client) -> None:
    client.reset(seed=0, scenario="quiet_night")
    res, steps = None, 0
    while res is None or not res.done:
        res = client.step("garbage")  # every request stranded: the episode ends fast
        steps += 1
    assert (
        res.observation.grid.request is None
        and "Episode over." in res.observation.prompt
    )
    with pytest.raises(
        EVGridServerError, match=rf"episode is over \(after {steps} steps\)"
    ):
        client.step("DEFER E1 5")
    assert client.state().done
    assert not client.reset(seed=0).done


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"scenario": "mars"}, "unknown scenario 'mars'; choose one of: evening_peak"),
        ({"scenario": 3}, "scenario: Input should be a valid string"),
        ({"seed": -1}, "seed: Input should be greater than or equal to 0"),
        ({"seed": "abc"}, "seed: Input should be a valid integer"),
        ({"seed": 1.5}, "seed: Input should be a valid integer"),
        ({"seed": 1, "speed": 2}, "speed: Extra inputs are not permitted"),
    ],
)
def test_server_bad_reset_keeps_the_running_episode(client, kwargs, words) -> None:
    client.reset(seed=5, scenario="morning_peak")
    client.step("DEFER E1 5")
    with pytest.raises(EVGridServerError) as e:
        client.reset(**kwargs)
    assert words in str(e.value)
    state = client.state()
    assert (state.scenario, state.seed, state.step_count) == ("morning_peak", 5, 1)
    client.step("DEFER E2 5")
    assert client.state().step_count == 2


def test_server_raw_frames_invalid_json_and_unknown_type(server_url: str) -> None:
    from websockets.sync.client import connect

    with connect(server_url.replace("http", "ws") + "/ws") as ws:
        for frame, code in [
            ("{not json", "INVALID_JSON"),
            (json.dumps({"type": "teleport"}), "UNKNOWN_TYPE"),
            (json.dumps({"type": "step"}), "VALIDATION_ERROR"),  # no data
        ]:
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=30))
            assert reply["type"] == "error" and reply["data"]["code"] == code
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"


def test_server_client_drops_the_socket_when_a_reply_times_out() -> None:
    # The client decodes frames itself; a reply that never comes must still drop the
    # socket (as OpenEnv's client does), or a late reply would answer the next request.
    class SilentSocket:
        closed = False

        async def recv(self) -> str:
            await asyncio.sleep(3600)
            return ""

        async def close(self) -> None:
            self.closed = True

    async def wait_for_reply() -> SilentSocket:
        client = EVGridClient("http://127.0.0.1:9", message_timeout_s=0.05)
        client._ws = ws = SilentSocket()
        with pytest.raises(TimeoutError):
            await client._receive()
        assert client._ws is None
        await client.close()  # waits for the dropped socket's close
        return ws

    assert asyncio.run(wait_for_reply()).closed


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        (
            "/step",
            {"action": {"text": "DEFER E1 5"}},
            409,
            "HTTP POST /step is stateless",
        ),
        ("/step", {"action": {"text": "DEFER E1 5", "x": 1}}, 422, "Extra inputs"),
        ("/step", {"action": {"text": "DEFER E1 5", "ev": 1}}, 422, "not both"),
        ("/step", {"action": "DEFER E1 5"}, 422, "valid dictionary"),
        ("/reset", {"scenario": "mars"}, 422, "unknown scenario 'mars'"),
        ("/reset", {"seed": -3}, 422, "greater than or equal to 0"),
        ("/reset", {"seed": 1, "speed": 2}, 422, "speed: Extra inputs"),
    ],
)
def test_server_http_bad_input_is_a_4xx_with_a_message(
    server_url, path, body, status, words
) -> None:
    r = httpx.post(server_url + path, json=body, timeout=30)
    assert r.status_code == status, r.text
    assert words in r.text
    assert httpx.get(server_url + "/health", timeout=30).json() == {"status": "healthy"}


def test_server_http_reset_and_state_work(server_url: str) -> None:
    r = httpx.post(
        server_url + "/reset", json={"seed": 9, "scenario": "monsoon"}, timeout=30
    )
    assert r.status_code == 200
    env = EVGridEnv()
    env.reset(seed=9, scenario="monsoon")
    assert r.json()["observation"]["prompt"] == env.render_text()
    assert r.json()["done"] is False
    # /state over HTTP is stateless too: a fresh environment, before any reset.
    assert httpx.get(server_url + "/state", timeout=30).json()["scenario"] is None
