"""The OpenEnv contract: `openenv validate`, /metadata, /schema, and API fuzzing."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("openenv")

from conftest import ALLOWED_ORIGIN  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from server_helpers import ROOT, ask, free_port, open_session, wait_healthy  # noqa: E402

from evgrid_core import ACTION_SYNTAX, KPI_UNITS, REWARD_KEYS, action_contract  # noqa: E402
from evgrid_openenv.app_args import parse_args  # noqa: E402
from evgrid_openenv.client import EVGridClient, EVGridServerError  # noqa: E402
from evgrid_openenv.models import COMMAND_FIELDS, EVGridAction  # noqa: E402


def openenv_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openenv.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_server_openenv_validate_url_passes(server_url: str) -> None:
    out = openenv_cli("validate", "--url", server_url, "--json", "--timeout", "30")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["passed"] is True
    assert len(report["criteria"]) >= 6  # openapi, health, metadata, schema, mcp, modes
    assert [c["id"] for c in report["criteria"] if not c["passed"]] == []


def test_server_openenv_yaml_passes_static_validation() -> None:
    # The code `openenv validate . --level static` runs, in-process (the CLI takes
    # half a minute to import on a busy machine).
    from openenv.validation import Level, Verdict, run_validation

    report = run_validation(ROOT, max_level=Level.STATIC, skip_build=True)
    assert report.verdict is Verdict.PASS, report
    checks = {r.check_id: r.status.value for r in report.results}
    assert checks.get("static.manifest") == "pass", checks


def test_server_metadata_names_the_env_and_its_action_syntax(server_url: str) -> None:
    meta = httpx.get(server_url + "/metadata", timeout=30).json()
    assert meta["name"] == "evgrid"
    assert action_contract() in meta["description"]
    assert "feeder_fault" in meta["description"]


def _undocumented(schema: dict) -> list[str]:
    """Properties without a description, in the schema and all its $defs."""
    missing = []
    for owner in [schema, *schema.get("$defs", {}).values()]:
        for name, prop in owner.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{owner.get('title')}.{name}")
    return missing


def test_server_schema_has_every_field_described(server_url: str) -> None:
    schema = httpx.get(server_url + "/schema", timeout=30).json()
    assert set(schema) >= {"action", "observation", "state"}
    for part in ("action", "observation", "state"):
        assert _undocumented(schema[part]) == [], part
    action = schema["action"]
    assert action["additionalProperties"] is False
    assert set(action["properties"]) >= {"text", "command", "ev", "station"}
    obs = schema["observation"]["properties"]
    assert {"prompt", "grid", "reward_parts", "valid", "reason"} <= set(obs)
    defs = schema["observation"]["$defs"]
    assert list(defs["RewardParts"]["properties"]) == list(REWARD_KEYS)
    assert list(schema["state"]["$defs"]["KPIs"]["properties"]) == list(KPI_UNITS)
    assert {"scenario", "seed", "kpis"} <= set(schema["state"]["properties"])


def test_server_typed_commands_are_the_action_syntax_named_fields() -> None:
    # One command per text keyword, its typed fields the syntax's names, each a
    # field of the wire model.
    assert list(COMMAND_FIELDS) == list(ACTION_SYNTAX)
    assert COMMAND_FIELDS["ROUTE"] == ("ev", "station", "charger")
    assert COMMAND_FIELDS["LOAD_SHIFT"] == ("station", "cap_pct", "minutes")
    wire = set(EVGridAction.model_fields)
    for names in COMMAND_FIELDS.values():
        assert set(names) <= wire


def test_server_openapi_fuzz_finds_no_5xx(server_url: str, tmp_path) -> None:
    out = subprocess.run(
        [
            sys.executable, "-m", "schemathesis.cli", "run", f"{server_url}/openapi.json",
            "--checks", "not_a_server_error", "--max-examples", "25", "--seed", "3",
            "--workers", "1", "--max-response-time", "20",
        ],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    tail = out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0, tail
    assert " passed" in out.stdout and "failed" not in out.stdout.split("SUMMARY")[-1]


# --- WebSocket fuzz: the OpenAPI schema does not cover /ws ---------------------------

_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.sampled_from(["ROUTE", "DEFER", "LOAD_SHIFT", "SLOW", "FAST", "ULTRA", "E1"]),
    st.lists(st.integers(), max_size=3),
)
_keys = st.sampled_from(
    [
        "text",
        "command",
        "ev",
        "station",
        "charger",
        "minutes",
        "cap_pct",
        "metadata",
        "x",
    ]
)
_payloads = st.one_of(
    st.dictionaries(_keys, _values, max_size=5),
    st.builds(lambda text: {"text": text}, st.text(max_size=40)),  # steps, mostly
)


def test_server_websocket_fuzz_keeps_the_session(server_url: str) -> None:
    with EVGridClient(server_url, message_timeout_s=60).sync() as client:
        client.reset(seed=0, scenario="evening_peak")
        seen: set[str] = set()

        @settings(
            max_examples=150,
            deadline=None,
            derandomize=True,
            database=None,  # the same examples every run
            suppress_health_check=list(HealthCheck),
        )
        @given(_payloads)
        def one(payload: dict) -> None:
            try:
                res = client.step(payload)
                seen.add("step")
                if res.done:
                    client.reset(seed=0)
            except EVGridServerError as e:
                seen.add(e.code)
                # INVALID_JSON: the client's json writes inf and nan as Infinity and
                # NaN, which are not JSON.
                assert e.code in (
                    "VALIDATION_ERROR",
                    "EXECUTION_ERROR",
                    "INVALID_JSON",
                ), str(e)
                if "episode is over" in str(e):
                    client.reset(seed=0)

        one()
        assert {"step", "VALIDATION_ERROR"} <= seen  # it reached steps and refusals
        assert client.state().scenario == "evening_peak"  # and the session lives


def test_server_evgrid_serve_starts_the_server(tmp_path) -> None:
    # No --host: it listens on this machine only (it used to bind 0.0.0.0).
    psutil = pytest.importorskip("psutil")
    port = free_port()
    with (tmp_path / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evgrid_cli", "serve", "--port", str(port),
             "--max-sessions", "2", "--log-level", "warning"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc)
        listening = {
            c.laddr.ip
            for c in psutil.Process(proc.pid).net_connections("inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port
        }
        assert listening == {"127.0.0.1"}
        assert httpx.get(url + "/metadata", timeout=30).json()["name"] == "evgrid"
        with EVGridClient(url).sync() as a, EVGridClient(url).sync() as b:
            a.reset(seed=1)
            b.reset(seed=2)
            c = EVGridClient(url).sync()  # a third session: --max-sessions 2 holds
            with pytest.raises(EVGridServerError, match="CAPACITY_REACHED"), c:
                c.reset(seed=3)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_server_docker_image_sets_its_host_explicitly() -> None:
    # The default is this machine only; the Space must serve every interface.
    cmd = (ROOT / "Dockerfile").read_text().rsplit("\nCMD ", 1)[1]
    assert '"--host", "0.0.0.0"' in cmd


def test_server_evgrid_serve_rejects_a_bad_port() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "evgrid_cli", "serve", "--port", "70000"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 2
    assert "port must be 1..65535, got 70000" in out.stderr


def test_server_serve_defaults_to_this_machine_only() -> None:
    assert parse_args([]).host == "127.0.0.1"
    assert parse_args(["--allowed-origins", "*"]).allowed_origins == "*"


# --- Browser origins ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),  # no Origin: a trainer, the Python client
        (ALLOWED_ORIGIN, True),  # the listed browser origin
        (ALLOWED_ORIGIN.upper() + "/", True),  # the same, as another client writes it
        ("https://evil.example", False),  # any other page in a browser
        ("null", False),  # a sandboxed page or a file
    ],
)
def test_server_websocket_origin_must_be_allowed(
    small_server_url: str, origin: str | None, allowed: bool
) -> None:
    from websockets.exceptions import InvalidStatus

    if allowed:
        with open_session(small_server_url, seed=1, origin=origin) as (_, reply):
            assert reply["type"] == "observation"
        return
    with (
        pytest.raises(InvalidStatus) as e,
        open_session(small_server_url, seed=1, origin=origin),
    ):
        pass
    assert e.value.response.status_code == 403


def test_server_no_browser_origin_is_allowed_by_default(server_url: str) -> None:
    from websockets.exceptions import InvalidStatus

    with (
        pytest.raises(InvalidStatus) as e,
        open_session(server_url, seed=1, origin=server_url),
    ):
        pass
    assert e.value.response.status_code == 403


# --- One set of rules for both transports ---------------------------------------------


def _ws_reply(url: str, frame: dict) -> dict:
    with open_session(url, seed=0) as (ws, _):
        return ask(ws, frame)


@pytest.mark.parametrize(
    "data",
    [
        {"seed": False},  # not coerced to 0 ...
        {"seed": "7"},  # ... nor to 7
        {"seed": 7.0},
        {"seed": -1},
        {"seed": 2**64},
        {"scenario": "mars"},
        {"seed": 1, "speed": 2},
    ],
)
def test_server_reset_is_refused_alike_over_http_and_ws(server_url, data) -> None:
    r = httpx.post(server_url + "/reset", json=data, timeout=30)
    frame = _ws_reply(server_url, {"type": "reset", "data": data})
    assert r.status_code == 422, r.text
    assert frame["data"]["code"] == r.json()["code"] == "VALIDATION_ERROR"
    assert frame["data"]["message"] == r.json()["message"]


@pytest.mark.parametrize(
    "action",
    [
        {"text": "DEFER E1 5", "x": 1},
        {"command": "DEFER", "ev": "1", "minutes": 5},
        {"text": "x" * 2000},
        {},
    ],
)
def test_server_step_is_refused_alike_over_http_and_ws(server_url, action) -> None:
    r = httpx.post(server_url + "/step", json={"action": action}, timeout=30)
    frame = _ws_reply(server_url, {"type": "step", "data": action})
    assert r.status_code == 422, r.text
    assert frame["data"]["code"] == r.json()["code"] == "VALIDATION_ERROR"
    # The same problems, found by the same model (HTTP's sit under 'action').
    http = [(e["loc"][1:], e["msg"]) for e in r.json()["detail"]]
    assert http == [(e["loc"], e["msg"]) for e in frame["data"]["errors"]]


def test_server_openapi_documents_what_http_answers(server_url: str) -> None:
    api = httpx.get(server_url + "/openapi.json", timeout=30).json()
    schemas = api["components"]["schemas"]

    def documented(path: str) -> set[int]:
        return {int(s) for s in api["paths"][path]["post"]["responses"]}

    def examples(path: str) -> list[dict]:
        body = api["paths"][path]["post"]["requestBody"]["content"]
        return schemas[body["application/json"]["schema"]["$ref"].split("/")[-1]][
            "examples"
        ]

    # The schema's own examples are taken, and answered as documented.
    for body in examples("/reset"):
        assert (
            httpx.post(server_url + "/reset", json=body, timeout=30).status_code == 200
        )
    for body in examples("/step"):
        r = httpx.post(server_url + "/step", json=body, timeout=30)
        assert r.status_code == 409 and r.json()["code"] == "EXECUTION_ERROR"
    # Every status the routes answer is in the schema.
    answers = {
        "/reset": [(b"{bad", 400), (b'{"seed": "7"}', 422), (b" " * 70_000, 413)],
        "/step": [(b"[1,]", 400), (b'{"action": {}}', 422), (b"x" * 70_000, 413)],
    }
    for path, cases in answers.items():
        for body, status in cases:
            r = httpx.post(server_url + path, content=body, timeout=30)
            assert r.status_code == status, (path, body[:20], r.text)
            assert status in documented(path), (path, status)
            assert set(r.json()) == {"code", "message", "detail"}
    assert 409 in documented("/step")


def test_server_openapi_conformance_of_own_routes(server_url: str, tmp_path) -> None:
    # Status codes, content types and bodies exactly as documented (OpenEnv's task
    # routes, which this environment does not offer, answer 404/501 undocumented).
    out = subprocess.run(
        [
            sys.executable, "-m", "schemathesis.cli", "run", f"{server_url}/openapi.json",
            "--include-path-regex", "^/(reset|step|mcp)$",
            "--checks", "not_a_server_error,status_code_conformance,"
            "content_type_conformance,response_schema_conformance",
            "--max-examples", "25", "--seed", "3", "--workers", "1",
            "--max-response-time", "20",
        ],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
