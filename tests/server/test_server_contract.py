"""The OpenEnv contract: `openenv validate`, /metadata, /schema, and API fuzzing."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("openenv")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from server_helpers import ROOT, free_port, wait_healthy  # noqa: E402

from evgrid_core import ACTION_SYNTAX, KPI_UNITS, REWARD_KEYS, action_contract  # noqa: E402
from evgrid_openenv.client import EVGridClient, EVGridServerError  # noqa: E402
from evgrid_openenv.models import COMMAND_FIELDS  # noqa: E402


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


def test_server_typed_commands_cover_the_action_syntax() -> None:
    # One command per text keyword, with one typed field per syntax field.
    assert list(COMMAND_FIELDS) == list(ACTION_SYNTAX)
    for word, fields in ACTION_SYNTAX.items():
        assert len(COMMAND_FIELDS[word]) == len(fields), word


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
_payloads = st.dictionaries(_keys, _values, max_size=5)


def test_server_websocket_fuzz_keeps_the_session(server_url: str) -> None:
    with EVGridClient(server_url, message_timeout_s=60).sync() as client:
        client.reset(seed=0, scenario="evening_peak")
        seen: set[str] = set()

        @settings(
            max_examples=150,
            deadline=None,
            derandomize=True,
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
                assert e.code in ("VALIDATION_ERROR", "EXECUTION_ERROR"), str(e)
                if "episode is over" in str(e):
                    client.reset(seed=0)

        one()
        assert {"step", "VALIDATION_ERROR"} <= seen  # it reached steps and refusals
        assert client.state().scenario == "evening_peak"  # and the session lives


def test_server_evgrid_serve_starts_the_server(tmp_path) -> None:
    port = free_port()
    with (tmp_path / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evgrid_cli", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--max-sessions", "2", "--log-level", "warning"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc)
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


def test_server_evgrid_serve_rejects_a_bad_port() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "evgrid_cli", "serve", "--port", "70000"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 2
    assert "port must be 1..65535, got 70000" in out.stderr
