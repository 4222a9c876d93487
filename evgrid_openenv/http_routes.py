"""HTTP POST /reset, /step and /mcp, by the same rules as /ws (``protocol``).

They replace OpenEnv 0.10.0's routes, whose bodies were checked by other models
than /ws messages (a seed of ``"7"``, ``7.0`` or ``false`` was taken over HTTP and
refused over /ws), whose 409 and examples were not in the OpenAPI schema, and
whose /mcp created sessions that no socket held (docs/server-upstream.md).

/reset and /step stay stateless, as OpenEnv's: each request gets a fresh
environment, so /step always answers 409 (no episode): play episodes over /ws.

A body must arrive within ``transport.http_timeout_s()`` (else 408, and the
connection is closed); a client that leaves mid-body is one warning in the log
(as uvicorn's own for a malformed request), not a traceback.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcResponse
from openenv.core.env_server.types import ResetResponse, StepResponse
from pydantic import BaseModel
from starlette.requests import ClientDisconnect

from . import protocol
from .environment import EVGridEnvironment
from .guards import too_large
from .models import EVGridErrorReply, EVGridResetParams, EVGridStepRequest
from .protocol import MAX_MESSAGE_CHARS, ProtocolError
from .transport import http_timeout_s

log = logging.getLogger("evgrid_openenv.http_routes")

_ERRORS: dict[int, str] = {
    400: "INVALID_JSON: the body is not strict JSON (RFC 8259, nesting at most 200).",
    408: "TIMEOUT: the body did not arrive within the deadline (15 s, or "
    "$EVGRID_HTTP_TIMEOUT_S); the connection is closed.",
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
    """The body, read up to the message limit (also when sent without a length)
    and within the deadline."""
    chunks, size = [], 0
    timeout_s = http_timeout_s()
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_MESSAGE_CHARS:
                    raise too_large(f"over {MAX_MESSAGE_CHARS:,} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise ProtocolError(
            "TIMEOUT",
            f"the body was not complete within {timeout_s:g} s ({size:,} bytes "
            "read): connection closed",
        ) from None
    return b"".join(chunks)


Handler = Callable[[Request], Awaitable[Response]]


def _client_may_leave(handler: Handler) -> Handler:
    """``handler``, with a client that leaves mid-body one log line, not a traceback."""

    @functools.wraps(handler)
    async def route(request: Request) -> Response:
        try:
            return await handler(request)
        except ClientDisconnect:
            client = request.client
            log.warning(
                "%s %s: the client left before its body was complete",
                f"{client.host}:{client.port}" if client else "client",
                request.url.path,
            )
            return Response(status_code=400)  # nobody reads it: uvicorn drops it

    return route


def _json(data: dict[str, Any]) -> Response:
    return Response(protocol.encode(data), media_type="application/json")


def _error(e: ProtocolError) -> JSONResponse:
    # A refused body may be unread: the connection is closed rather than kept
    # alive for whatever the client sends after it.
    headers = {"connection": "close"} if e.http_status in (408, 413) else None
    return JSONResponse(e.http_body(), status_code=e.http_status, headers=headers)


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
        responses=_responses(400, 408, 413, 422),
        openapi_extra=_body(EVGridResetParams, required=False),
    )
    @_client_may_leave
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
        responses=_responses(400, 408, 409, 413, 422),
        openapi_extra=_body(EVGridStepRequest, required=True),
    )
    @_client_may_leave
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
        "with status 200, except a body over the limit (413) or too slow (408).",
        responses=_responses(408, 413),
    )
    @_client_may_leave
    async def mcp(request: Request) -> Response:
        try:
            payload = protocol.read_json(await read_body(request))
        except ProtocolError as e:
            if e.http_status in (408, 413):
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
