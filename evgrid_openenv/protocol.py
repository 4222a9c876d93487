"""The wire rules both transports share: /ws messages and HTTP /reset, /step, /mcp.

Every message goes through three phases, so that an error reply always means
"nothing changed":

1. read: the text is JSON (at most ``MAX_MESSAGE_CHARS``, nesting at most 200 deep,
   no lone surrogates) and an object of the documented shape;
2. check: the data validates against the wire models, and the environment refuses
   a step it cannot take before it touches the episode;
3. apply and answer: a step that was applied is answered as a step; writing the
   reply cannot fail (``encode`` falls back to a scrubbed copy).

Both transports call the same functions here, so HTTP and /ws accept and refuse
the same data with the same messages; only the envelope differs (an error frame
with ``code`` over /ws, the HTTP status of that code over HTTP).
"""

from __future__ import annotations

import json
from typing import Any

from openenv.core.env_server.mcp_types import (
    JsonRpcErrorCode,
    JsonRpcRequest,
    JsonRpcResponse,
    McpMethod,
)
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, from_json, to_json

from .environment import EVGridEnvironment, EVGridRequestError, describe_errors
from .fast import observation_frame
from .models import EVGridAction, EVGridResetParams, EVGridStepRequest

# [chars] the longest /ws message or HTTP body read. A step message is at most about
# 1.1 kB (MAX_TEXT_CHARS of text); anything longer is refused before it is parsed.
MAX_MESSAGE_CHARS = 64 * 1024
MESSAGE_TYPES = ("reset", "step", "state", "close", "mcp")
_DATA = {"reset": "optional", "step": "required", "mcp": "required"}  # else: none

# One code per kind of refusal; over HTTP each is this status.
HTTP_STATUS = {
    "INVALID_JSON": 400,
    "UNKNOWN_TYPE": 400,
    "VALIDATION_ERROR": 422,
    "EXECUTION_ERROR": 409,
    "TIMEOUT": 408,  # HTTP only: a body too slow to arrive (``http_routes``)
}
_CODE_OF_STATUS = {422: "VALIDATION_ERROR", 409: "EXECUTION_ERROR"}


class ProtocolError(Exception):
    """A message refused before anything changed: ``code``, a message, field errors."""

    def __init__(
        self,
        code: str,
        message: str,
        errors: list[dict[str, Any]] | None = None,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.errors = errors or []
        self.http_status = http_status or HTTP_STATUS[code]

    def ws_frame(self) -> dict[str, Any]:
        data: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.errors:
            data["errors"] = self.errors
        return {"type": "error", "data": data}

    def http_body(self) -> dict[str, Any]:
        detail = self.errors or [
            {"type": self.code.lower(), "loc": ["body"], "msg": self.message}
        ]
        return {"code": self.code, "message": self.message, "detail": detail}


# --- Read -----------------------------------------------------------------------------


def json_kind(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    for kind, name in ((dict, "object"), (list, "array"), (str, "string")):
        if isinstance(value, kind):
            return name
    return "number"


def read_json(text: str | bytes) -> Any:
    """Decode one message; refuse what is too long or not strict JSON."""
    if len(text) > MAX_MESSAGE_CHARS:
        raise ProtocolError(
            "INVALID_JSON",
            f"message of {len(text):,} characters is over the limit of "
            f"{MAX_MESSAGE_CHARS:,}: an action is one short line",
        )
    try:
        return from_json(text, allow_inf_nan=False)
    except ValueError as e:
        hint = ""
        if "hex escape" in str(e):
            hint = " (a lone UTF-16 surrogate escape such as \\ud800 is not text)"
        elif "recursion limit" in str(e):
            hint = " (nested deeper than 200 levels)"
        raise ProtocolError("INVALID_JSON", f"invalid JSON: {e}{hint}") from None


def read_frame(message: dict[str, Any]) -> tuple[str, Any]:
    """A /ws message (the ASGI receive event) as its type and data."""
    text = message.get("text")
    if text is None:
        size = len(message.get("bytes") or b"")
        raise ProtocolError(
            "INVALID_JSON",
            f"binary frame of {size:,} bytes: send each message as a JSON text frame",
        )
    frame = read_json(text)
    if not isinstance(frame, dict):
        raise ProtocolError(
            "VALIDATION_ERROR",
            'a message must be a JSON object such as {"type": "step", "data": '
            f'{{"text": "DEFER E1 15"}}}}, got a JSON {json_kind(frame)}',
        )
    kind = frame.get("type")
    if not isinstance(kind, str):
        got = (
            "it is missing" if "type" not in frame else f"got a JSON {json_kind(kind)}"
        )
        raise ProtocolError(
            "VALIDATION_ERROR",
            f"a message needs 'type', a string, one of {', '.join(MESSAGE_TYPES)} "
            f"({got})",
        )
    if kind not in MESSAGE_TYPES:
        raise ProtocolError(
            "UNKNOWN_TYPE",
            f"unknown message type {kind[:40]!r}; expected one of "
            f"{', '.join(MESSAGE_TYPES)}",
        )
    extra = [repr(k[:40]) for k in frame if k not in ("type", "data")]
    need = _DATA.get(kind)
    if need is None and "data" in frame:
        extra.insert(0, "'data'")
    if extra:
        raise ProtocolError(
            "VALIDATION_ERROR",
            f"unknown field(s) in a {kind} message: {', '.join(extra[:5])}",
        )
    if need == "required" and "data" not in frame:
        raise ProtocolError(
            "VALIDATION_ERROR", f"a {kind} message needs 'data', a JSON object"
        )
    return kind, frame.get("data", {})


def _object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ProtocolError(
            "VALIDATION_ERROR",
            f"{what} must be a JSON object, got a JSON {json_kind(data)}",
        )
    return data


def field_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors without the input they quote (it may be long)."""
    return [
        {"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]}
        for e in exc.errors(include_url=False, include_context=False)
    ]


def _refused(exc: EVGridRequestError) -> ProtocolError:
    return ProtocolError(_CODE_OF_STATUS.get(exc.status, "EXECUTION_ERROR"), str(exc))


# --- Check and apply --------------------------------------------------------------


def reset(env: EVGridEnvironment, data: Any) -> dict[str, Any]:
    """Start an episode from a /ws reset's data or HTTP /reset's body."""
    data = _object(data, "reset data")
    try:
        params = EVGridResetParams.model_validate(data)
    except ValidationError as e:
        raise ProtocolError(
            "VALIDATION_ERROR", f"bad reset: {describe_errors(e)}", field_errors(e)
        ) from None
    try:
        obs = env.reset(
            seed=params.seed, episode_id=params.episode_id, scenario=params.scenario
        )
    except EVGridRequestError as e:  # the core checks before touching the episode
        raise _refused(e) from None
    return observation_frame(obs)


def step_action(data: Any, what: str = "step data (the action)") -> EVGridAction:
    """A /ws step's data as an action."""
    data = _object(data, what)
    try:
        return EVGridAction.model_validate(data)
    except ValidationError as e:
        raise ProtocolError(
            "VALIDATION_ERROR", f"bad action: {describe_errors(e)}", field_errors(e)
        ) from None


def step_request(body: Any) -> EVGridAction:
    """HTTP /step's body as an action (the same action model as over /ws)."""
    body = _object(body, "the /step body")
    try:
        return EVGridStepRequest.model_validate(body).action
    except ValidationError as e:
        raise ProtocolError(
            "VALIDATION_ERROR",
            f"bad step request: {describe_errors(e)}",
            field_errors(e),
        ) from None


def step(env: EVGridEnvironment, action: EVGridAction) -> dict[str, Any]:
    """Apply one action: refused (nothing changed) or applied and answered."""
    try:
        obs = env.step(action)
    except EVGridRequestError as e:  # raised before the episode is touched
        raise _refused(e) from None
    return observation_frame(obs)


# --- Answer ---------------------------------------------------------------------------


def encode(frame: dict[str, Any]) -> str:
    """The reply as JSON text; never fails, so an applied step is always answered."""
    try:
        return to_json(frame).decode()
    except (PydanticSerializationError, ValueError):
        # Only text that is not Unicode can get here (read_json refuses lone
        # surrogates, so none should): replace it rather than lose the reply.
        return json.dumps(_scrub(frame), ensure_ascii=False, default=repr)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


# --- MCP --------------------------------------------------------------------------


def mcp_reply(payload: Any) -> dict[str, Any]:
    """The JSON-RPC answer to an MCP request (POST /mcp, or a /ws mcp message).

    This environment has no MCP tools: ``tools/list`` is empty. OpenEnv's session
    methods are not offered: a session is one /ws connection and ends with it, so
    no session exists without a socket holding it and none can be attached to.
    """
    if not isinstance(payload, dict):
        return _rpc_error(
            JsonRpcErrorCode.INVALID_REQUEST,
            f"a JSON-RPC request is a JSON object, got a JSON {json_kind(payload)}",
        )
    try:
        request = JsonRpcRequest.model_validate(payload)
    except ValidationError as e:
        return _rpc_error(
            JsonRpcErrorCode.INVALID_REQUEST, f"Invalid request: {describe_errors(e)}"
        )
    rid, method = request.id, request.method
    if method == McpMethod.TOOLS_LIST:
        return JsonRpcResponse.success(
            result={"tools": []}, request_id=rid
        ).model_dump()
    if method == McpMethod.TOOLS_CALL:
        name = str(request.params.get("name", ""))[:80]
        return _rpc_error(
            JsonRpcErrorCode.INVALID_PARAMS,
            f"Tool not found: {name!r} (this environment has no MCP tools)",
            rid,
        )
    if method.startswith("openenv/session/"):
        return _rpc_error(
            JsonRpcErrorCode.METHOD_NOT_FOUND,
            f"{method[:60]} is not offered: a session is one /ws WebSocket "
            "connection, lives as long as it, and cannot be created or attached "
            "to any other way",
            rid,
        )
    return _rpc_error(
        JsonRpcErrorCode.METHOD_NOT_FOUND, f"Method not found: {method[:60]!r}", rid
    )


def _rpc_error(
    code: JsonRpcErrorCode, message: str, rid: str | int | None = None
) -> dict[str, Any]:
    return JsonRpcResponse.error_response(code, message, request_id=rid).model_dump()
