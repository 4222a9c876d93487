"""/ws frames that are not what the protocol documents: an error, and the session lives.

Driven with a raw WebSocket (the client only writes well-formed frames). Every
case checks the three promises: the reply is an error naming the problem, nothing
changed (same episode, same step count), and the session goes on playing.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openenv")

from server_helpers import ask, open_session  # noqa: E402

from evgrid_core.actions import MAX_ACTION_CHARS  # noqa: E402
from evgrid_openenv.models import MAX_TEXT_CHARS  # noqa: E402
from evgrid_openenv.protocol import encode  # noqa: E402

DEEP = 5_000  # levels: past Python's recursion limit, under the message size limit

# (frame, error code, words the message must contain)
BAD_FRAMES = [
    # binary frame: the protocol is JSON text frames
    (b"\x00\x01\x02binary", "INVALID_JSON", "binary frame of 9 bytes"),
    # JSON, but not an object
    ("[]", "VALIDATION_ERROR", "must be a JSON object such as"),
    ('"step"', "VALIDATION_ERROR", "got a JSON string"),
    ("null", "VALIDATION_ERROR", "got a JSON null"),
    ("42", "VALIDATION_ERROR", "got a JSON number"),
    ("[" * DEEP + "]" * DEEP, "INVALID_JSON", "nested deeper than 200 levels"),
    # deep nesting inside an otherwise good step
    (
        '{"type": "step", "data": {"metadata": ' + '{"a": ' * DEEP + "1}" * DEEP + "}}",
        "INVALID_JSON",
        "nested deeper than 200 levels",
    ),
    # not JSON at all, or not strict JSON
    ("{not json", "INVALID_JSON", "invalid JSON: key must be a string"),
    ('{"type": "step", "data": {"text": NaN}}', "INVALID_JSON", "invalid JSON"),
    # an object, but not of the documented shape
    ('{"data": {}}', "VALIDATION_ERROR", "needs 'type', a string"),
    ('{"type": ["step"]}', "VALIDATION_ERROR", "got a JSON array"),
    ('{"type": "teleport"}', "UNKNOWN_TYPE", "unknown message type 'teleport'"),
    ('{"type": "step"}', "VALIDATION_ERROR", "a step message needs 'data'"),
    ('{"type": "step", "data": [1]}', "VALIDATION_ERROR", "got a JSON array"),
    ('{"type": "reset", "data": "seed=1"}', "VALIDATION_ERROR", "got a JSON string"),
    ('{"type": "state", "extra": 1}', "VALIDATION_ERROR", "in a state message: 'ex"),
]


@pytest.mark.parametrize(("frame", "code", "words"), BAD_FRAMES)
def test_server_bad_frame_gets_its_error_and_the_session_lives(
    server_url: str, frame: str | bytes, code: str, words: str
) -> None:
    with open_session(server_url, seed=3) as (ws, _):
        ask(ws, {"type": "step", "data": {"text": "DEFER E1 15"}})
        reply = ask(ws, frame)
        assert reply["type"] == "error", reply
        assert reply["data"]["code"] == code
        assert words in reply["data"]["message"], reply["data"]["message"]
        assert "attribute" not in reply["data"]["message"]  # no Python internals
        state = ask(ws, {"type": "state"})["data"]
        assert (state["seed"], state["step_count"]) == (3, 1)  # nothing changed
        assert ask(ws, {"type": "step", "data": {"text": "DEFER E2 15"}})["type"] == (
            "observation"
        )


def test_server_every_bad_frame_in_one_session(server_url: str) -> None:
    # One after another on one connection: none of them ends it.
    with open_session(server_url, seed=8) as (ws, _):
        for frame, code, _ in BAD_FRAMES:
            assert ask(ws, frame)["data"]["code"] == code
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 0


# --- An error means nothing changed --------------------------------------------------


def test_server_text_that_is_not_unicode_is_refused_before_the_step(
    server_url: str,
) -> None:
    # A lone surrogate cannot be written back as JSON: refused when read, so the step
    # is never applied (it was applied, then answered with an error).
    with open_session(server_url, seed=4) as (ws, _):
        reply = ask(ws, '{"type": "step", "data": {"text": "ROUTE E1 S1 FAST\\ud800"}}')
        assert reply["data"]["code"] == "INVALID_JSON"
        assert "lone UTF-16 surrogate" in reply["data"]["message"]
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 0
        # A surrogate pair is text (an emoji): an invalid step, answered as a step.
        reply = ask(
            ws, '{"type": "step", "data": {"text": "DEFER E1 15 \\ud83d\\ude00"}}'
        )
        assert reply["type"] == "observation"
        assert reply["data"]["observation"]["valid"] is False
        assert reply["data"]["observation"]["action"] == "DEFER E1 15 \U0001f600"
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 1


def test_server_reply_writer_never_fails() -> None:
    # Should text that is not Unicode ever reach a reply, the reply is still written
    # (with a replacement character), so an applied step is never answered as an error.
    frame = json.loads(encode({"type": "observation", "data": {"action": "E1\ud800"}}))
    assert frame == {"type": "observation", "data": {"action": "E1?"}}


# --- Size -----------------------------------------------------------------------------


def test_server_action_size_is_capped_and_never_echoed_whole(server_url: str) -> None:
    with open_session(server_url, seed=5) as (ws, _):
        # 200 kB, over the protocol's limit and within the transport's: refused
        # unread, with a short reply (above the transport's: test_server_limits).
        ws.send(json.dumps({"type": "step", "data": {"text": "E" * 200_000}}))
        reply = ws.recv(timeout=60)
        assert len(reply) < 500, len(reply)
        data = json.loads(reply)["data"]
        assert data["code"] == "INVALID_JSON"
        assert "200,038 characters is over the limit of 65,536" in data["message"]
        # Within the message limit, over the text limit: refused, input not quoted.
        reply = ask(ws, {"type": "step", "data": {"text": "x" * (MAX_TEXT_CHARS + 1)}})
        assert reply["data"]["code"] == "VALIDATION_ERROR"
        assert f"at most {MAX_TEXT_CHARS} characters" in reply["data"]["message"]
        assert "xxxxx" not in json.dumps(reply)
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 0
        # A long completion within the limit is an invalid step; the echo is the
        # line as the parser read it, cut to the longest valid line.
        text = "  ROUTE E1 S1 FAST because it is the closest " + "x" * 900
        obs = ask(ws, {"type": "step", "data": {"text": text}})["data"]["observation"]
        assert obs["valid"] is False
        assert obs["action"] == text.strip()[:MAX_ACTION_CHARS] + "…"
        # A valid line with a model's trailing newline: echoed without it.
        obs = ask(ws, {"type": "step", "data": {"text": "DEFER E2 15\n"}})
        assert obs["data"]["observation"]["action"] == "DEFER E2 15"
        assert ask(ws, {"type": "state"})["data"]["step_count"] == 2
