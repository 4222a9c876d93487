"""HTTP POST /reset, /step and /mcp, by the same rules as /ws (``protocol``).

They replace OpenEnv 0.10.0's routes, whose bodies were checked by other models
than /ws messages (a seed of ``"7"``, ``7.0`` or ``false`` was taken over HTTP and
refused over /ws), whose 409 and examples were not in the OpenAPI schema, and
whose /mcp created sessions that no socket held (docs/server-upstream.md).

/reset and /step stay stateless, as OpenEnv's: each request gets a fresh
environment, so /step always answers 409 (no episode): play episodes over /ws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse
from openenv.core.env_server.types import ResetResponse, StepResponse
from pydantic import BaseModel

from . import protocol
from .environment import EVGridEnvironment
from .guards import too_large
from .models import EVGridErrorReply, EVGridResetParams, EVGridStepRequest
from .protocol import MAX_MESSAGE_CHARS, ProtocolError

_ERRORS: dict[int, str] = {
    400: "INVALID_JSON: the body is not strict JSON (RFC 8259, nesting at most 200).",
    409: "EXECUTION_ERROR: no episode to step (HTTP is stateless: play over /ws).",
    413: f"INVALID_JSON: the body is over {MAX_MESSAGE_CHARS:,} bytes.",
    422: "VALIDATION_ERROR: not a JSON object, or a field is missing, unknown, of "
    "the wrong JSON type (no coercion: a seed is a JSON integer) or out of range, "
    "or the scenario is unknown.",
}


def _responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {s: {"model": EVGridErrorReply, "description": _ERRORS[s]} for s in statuses}


def _body(model: type[BaseModel], required: bool) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    content = {"application/json": {"schema": ref}}
    return {"requestBody": {"required": required, "content": content}}


async def read_body(request: Request) -> bytes:
    """The body, read up to the message limit (also when sent without a length)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_MESSAGE_CHARS:
            raise too_large(f"over {MAX_MESSAGE_CHARS:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _json(data: dict[str, Any]) -> Response:
    return Response(protocol.encode(data), media_type="application/json")


def _error(e: ProtocolError) -> JSONResponse:
    return JSONResponse(e.http_body(), status_code=e.http_status)


def add_http_routes(
    app: FastAPI, env_factory: Callable[[], EVGridEnvironment] = EVGridEnvironment
) -> None:
    """Register POST /reset, /step and /mcp on ``app`` (OpenEnv's removed first)."""

    def on_fresh_env(apply: Callable[[EVGridEnvironment, Any], Any], data: Any) -> Any:
        """``apply(env, data)`` on a fresh environment, closed after (HTTP is stateless)."""
        env = env_factory()
        try:
            return apply(env, data)
        finally:
            env.close()

    @app.post(
        "/reset",
        tags=["Environment Control"],
        summary="Reset a fresh environment (stateless)",
        description="The first observation of an episode, from a fresh environment "
        "(HTTP is stateless: play episodes over /ws). The body is a /ws reset "
        "message's data, checked by the same rules; omitted = {}.",
        response_model=ResetResponse,
        responses=_responses(400, 413, 422),
        openapi_extra=_body(EVGridResetParams, required=False),
    )
    async def reset(request: Request) -> Response:
        try:
            body = await read_body(request)
            data = protocol.read_json(body) if body.strip() else {}
            return _json(on_fresh_env(protocol.reset, data))
        except ProtocolError as e:
            return _error(e)

    @app.post(
        "/step",
        tags=["Environment Control"],
        summary="Step a fresh environment (stateless: always 409)",
        description="Checks the action by the same rules as a /ws step message's "
        "data, then answers 409: a fresh environment has no episode to step. "
        "Play episodes over /ws.",
        response_model=StepResponse,
        responses=_responses(400, 409, 413, 422),
        openapi_extra=_body(EVGridStepRequest, required=True),
    )
    async def step(request: Request) -> Response:
        try:
            action = protocol.step_request(protocol.read_json(await read_body(request)))
            return _json(on_fresh_env(protocol.step, action))
        except ProtocolError as e:
            return _error(e)

    @app.post(
        "/mcp",
        tags=["MCP"],
        summary="MCP JSON-RPC: no tools, no HTTP sessions",
        description="JSON-RPC 2.0. tools/list is empty; openenv/session/* is not "
        "offered (a session is one /ws connection). Errors are JSON-RPC errors "
        "with status 200, except a body over the limit (413).",
        responses=_responses(413),
    )
    async def mcp(request: Request) -> Response:
        try:
            payload = protocol.read_json(await read_body(request))
        except ProtocolError as e:
            if e.http_status == 413:
                return _error(e)
            reply = JsonRpcResponse.error_response(
                JsonRpcErrorCode.PARSE_ERROR, e.message
            ).model_dump()
            return _json(reply)
        return _json(protocol.mcp_reply(payload))

    _publish_schemas(app, (EVGridResetParams, EVGridStepRequest))


def _publish_schemas(app: FastAPI, models: tuple[type[BaseModel], ...]) -> None:
    """Add the request models the routes read by hand to the OpenAPI components."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in models:
                js = model.model_json_schema(
                    ref_template="#/components/schemas/{model}"
                )
                for name, sub in js.pop("$defs", {}).items():
                    components.setdefault(name, sub)
                components[model.__name__] = js
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
