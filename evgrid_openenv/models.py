"""Wire types: what travels between an OpenEnv client and the EV Grid server.

Strict pydantic models (``extra="forbid"``, a description on every field). They
only carry data; every rule of the world (what is a valid action, what a step
pays) stays in ``evgrid_core``.

An action is either one text line exactly as an LLM writes it (``text``) or the
same decision in typed fields (``command`` plus its fields). Both end up as one
line given to the core's parser, so a typed action and its text form are judged
identically: a malformed or impossible action is an invalid step (the EV is
stranded and a penalty is paid), not a transport error. Only a payload that is
not an action at all (unknown field, wrong JSON type, both or neither forms) is
refused with a validation error.
"""

from __future__ import annotations

from typing import Any, Literal

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic_core import PydanticCustomError

from evgrid_core import (
    CHARGERS,
    KPI_UNITS,
    REWARD_KEYS,
    ChargerKind,
    Defer,
    LoadShift,
    Route,
    format_action,
)
from evgrid_core.actions import (
    ACTION_SYNTAX,
    DEFER_MINUTES,
    MAX_ACTION_CHARS,
    SHIFT_CAP_PCT,
    SHIFT_MINUTES,
)
from evgrid_core.chargers import KIND_NAMES, N_KINDS

# --- Action -------------------------------------------------------------------------

# [chars] the longest ``text`` taken. A valid line is at most MAX_ACTION_CHARS (23);
# an LLM's whole completion of a few hundred tokens still reaches the parser and is
# an invalid step if it is not one action line. Longer text is refused (nothing is
# stepped): it is not an answer, and it would be read, judged and echoed for nothing.
MAX_TEXT_CHARS = 1024

# The typed fields each command takes, in the order of its text line: the core's
# syntax names them.
COMMAND_FIELDS: dict[str, tuple[str, ...]] = {
    kw: tuple(f.name for f in fields) for kw, fields in ACTION_SYNTAX.items()
}
_TYPED_FIELDS = tuple(
    dict.fromkeys(n for names in COMMAND_FIELDS.values() for n in names)
)


def _listed(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


class EVGridAction(Action):
    """One decision: ``text`` (an LLM's line) or ``command`` with its typed fields."""

    text: str | None = Field(
        default=None,
        description="One action line as an LLM writes it, e.g. 'ROUTE E17 S5 FAST', "
        "'DEFER E17 15' or 'LOAD_SHIFT S5 50 30'. Parsed by the core's parser; text "
        "that does not parse is an invalid action (EV stranded, penalty). Give either "
        f"text or command, not both. At most {MAX_TEXT_CHARS} characters.",
        max_length=MAX_TEXT_CHARS,
    )
    command: Literal["ROUTE", "DEFER", "LOAD_SHIFT"] | None = Field(
        default=None,
        description="Typed form: ROUTE needs ev, station, charger; DEFER needs ev, "
        "minutes; LOAD_SHIFT needs station, cap_pct, minutes.",
    )
    ev: int | None = Field(
        default=None,
        strict=True,
        description="EV id (the n of E<n>): the request being decided.",
    )
    station: int | None = Field(
        default=None, strict=True, description="Station id (the n of S<n>), 1-based."
    )
    charger: Literal[KIND_NAMES] | None = Field(  # type: ignore[valid-type]
        default=None,
        description="Charger kind for ROUTE: "
        + ", ".join(c.label for c in CHARGERS)
        + ".",
    )
    minutes: int | None = Field(
        default=None,
        strict=True,
        description=f"[min] DEFER wait ({_listed(DEFER_MINUTES)}) or LOAD_SHIFT "
        f"duration ({_listed(SHIFT_MINUTES)}).",
    )
    cap_pct: int | None = Field(
        default=None,
        strict=True,
        description="[%] LOAD_SHIFT cap as a share of the station's limit "
        f"({_listed(SHIFT_CAP_PCT)}).",
    )

    @model_validator(mode="after")
    def _one_form(self) -> EVGridAction:
        given = [f for f in _TYPED_FIELDS if getattr(self, f) is not None]
        if self.text is not None:
            if self.command is not None or given:
                extra = ", ".join(["command", *given] if self.command else given)
                raise _form_error(
                    f"give either text or the typed fields, not both (got text and "
                    f"{extra})"
                )
            return self
        if self.command is None:
            raise _form_error(
                "an action needs either 'text' (one action line) or 'command' with "
                "its fields"
            )
        wanted = COMMAND_FIELDS[self.command]
        missing = [f for f in wanted if getattr(self, f) is None]
        foreign = [f for f in given if f not in wanted]
        if missing or foreign:
            problems = []
            if missing:
                problems.append(f"missing {', '.join(missing)}")
            if foreign:
                problems.append(f"{', '.join(foreign)} not used by {self.command}")
            raise _form_error(
                f"{self.command} takes {', '.join(wanted)}: {'; '.join(problems)}"
            )
        return self

    def to_line(self) -> str:
        """The action as one text line, for the core's parser.

        Typed fields become the core's action and its canonical line
        (``format_action``), so the parser judges values the typed form allows but
        the syntax does not (a DEFER of 7 minutes) exactly as in text.
        """
        if self.text is not None:
            return self.text
        if self.command == "ROUTE":
            action = Route(self.ev, self.station, ChargerKind[self.charger])  # type: ignore[arg-type, misc]
        elif self.command == "DEFER":
            action = Defer(self.ev, self.minutes)  # type: ignore[arg-type]
        else:
            action = LoadShift(self.station, self.cap_pct, self.minutes)  # type: ignore[arg-type]
        return format_action(action)


def _form_error(message: str) -> PydanticCustomError:
    # Not ValueError: its error context holds the exception object, which OpenEnv's
    # HTTP 422 reply cannot serialise (a 500 instead of a 422).
    return PydanticCustomError("action_form", message)


# --- Observation --------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EVRequestView(_Strict):
    """The EV whose request is being decided (the core's ``EVRequest``)."""

    id: int = Field(description="EV id: write it as E<id> in an action.")
    klass: str = Field(description="Vehicle class: car, 3w or cab.")
    node: str = Field(description="Locality where the EV is now.")
    battery_kwh: float = Field(description="[kWh] battery capacity.")
    soc: float = Field(description="[0-1] state of charge now.")
    target: float = Field(description="[0-1] state of charge it wants to reach.")
    max_ac_kw: float = Field(description="[kW] highest AC power it accepts.")
    max_dc_kw: float = Field(description="[kW] highest DC power; 0 = no DC inlet.")
    range_km: float = Field(description="[km] it can still drive.")
    waited_min: float = Field(description="[min] since its first request.")
    defers: int = Field(description="Times it has been deferred already.")
    critical: bool = Field(description="Must plug in by a deadline.")
    deadline_in_min: float | None = Field(
        description="[min] left to plug in (critical EVs only, else null)."
    )
    patience_left_min: float = Field(description="[min] before it gives up.")


class GridView(_Strict):
    """The structured observation (the core's ``Observation``); S=25, F=6."""

    tick: int = Field(description="Tick of the episode (5 min each).")
    n_ticks: int = Field(description="Ticks in the episode.")
    clock: str = Field(description="Clock time HH:MM.")
    tariff_inr: float = Field(description="[INR/kWh] energy tariff now.")
    renewable_share: float = Field(description="[0-1] renewable share of supply now.")
    request: EVRequestView | None = Field(
        description="The request to decide; null once the episode is over."
    )
    pending: int = Field(description="Requests due now, this one included.")
    travel_min: list[float] = Field(
        description="(S,) [min] drive from the request's locality to each station."
    )
    road_km: list[float] = Field(description="(S,) [km] road distance to each station.")
    route_mask: list[list[bool]] = Field(
        description=f"(S,{N_KINDS}) valid ROUTE targets per station and kind "
        f"{','.join(KIND_NAMES)}."
    )
    defer_options: list[int] = Field(description="[min] DEFER values valid now.")
    plugs: list[list[int]] = Field(
        description=f"(S,{N_KINDS}) plugs per station and kind."
    )
    busy: list[list[int]] = Field(description=f"(S,{N_KINDS}) plugs in use.")
    queue: list[list[int]] = Field(description=f"(S,{N_KINDS}) EVs queued.")
    inbound: list[list[int]] = Field(
        description=f"(S,{N_KINDS}) EVs routed to the station and kind, still driving there."
    )
    inbound_kw: list[float] = Field(
        description="(S,) [kW] what the EVs driving to each station and due within the "
        "forecast's 30 minutes will draw on arrival (each at min(charger, vehicle) kW); "
        "the sparing rule adds it to the feeder's forecast."
    )
    open: list[bool] = Field(description="(S,) station open now.")
    cap_kw: list[float] = Field(
        description="(S,) [kW] station power limit now (the cap when load-shifted)."
    )
    station_kw: list[float] = Field(description="(S,) [kW] mean power last tick.")
    shifted: list[bool] = Field(description="(S,) under a LOAD_SHIFT cap.")
    feeder_of: list[int] = Field(description="(S,) feeder index, 0-based.")
    feeder_util: list[float] = Field(description="(F,) [0-1] utilisation last tick.")
    feeder_capacity_kw: list[float] = Field(description="(F,) [kW] usable now.")
    feeder_forecast: list[float] = Field(
        description="(F,) [0-1] peak utilisation expected in the next 30 min."
    )
    feeder_shed_kw: list[float] = Field(
        description="(F,) [kW] EV charging shed last tick by feeder protection "
        "(the EV load asked above the feeder's capacity)."
    )
    load_shifts_left: int = Field(description="LOAD_SHIFTs still allowed this tick.")
    station_names: list[str] = Field(description="(S,) station names.")
    feeder_min_voltage_pu: list[float] | None = Field(
        default=None,
        description="(F,) [p.u.] each feeder's lowest voltage at a point of supply "
        "last tick (11 kV floor 0.91, LV side 0.901 in these units); null unless the "
        "grid model is a network (lindistflow, ac).",
    )
    station_transformer_loading: list[float] | None = Field(
        default=None,
        description="(S,) [0-1] each station's distribution transformer last tick: "
        "kVA carried / rating (above 1 pays transformer_overload; 0: an HT "
        "station); null unless the grid model is a network (lindistflow, ac).",
    )


RewardParts = create_model(
    "RewardParts",
    __config__=ConfigDict(extra="forbid"),
    __doc__="The step's reward broken into its weighted parts; they sum to reward.",
    **{
        key: (float, Field(default=0.0, description=f"Weighted '{key}' part (<= 0)."))
        for key in REWARD_KEYS
    },
)


class EVGridObservation(Observation):
    """What the agent gets after reset and after each step."""

    prompt: str = Field(
        default="",
        description="The compact text observation an LLM reads (about 300 tokens).",
    )
    grid: GridView | None = Field(
        default=None, description="The same observation, structured."
    )
    reward_parts: RewardParts = Field(  # type: ignore[valid-type]
        default_factory=RewardParts,
        description="Breakdown of the last step's reward (all 0 after reset).",
    )
    valid: bool | None = Field(
        default=None,
        description="Whether the last action was valid (null after reset).",
    )
    reason: str = Field(
        default="", description="Why the last action was invalid ('' when valid)."
    )
    action: str | None = Field(
        default=None,
        description="The last action as the parser read it: the line without its "
        f"surrounding whitespace, cut to {MAX_ACTION_CHARS} characters (the longest "
        "valid line) plus '…' when longer (null after reset).",
    )
    ev: int | None = Field(
        default=None, description="The EV the last step decided (null after reset)."
    )
    tick: int = Field(default=0, description="Tick after the last step.")


# --- State --------------------------------------------------------------------------

KPIs = create_model(
    "KPIs",
    __config__=ConfigDict(extra="forbid"),
    __doc__="The episode's KPIs so far (final once done).",
    **{
        key: (float, Field(default=0.0, description=f"[{unit or 'reward'}] {key}."))
        for key, unit in KPI_UNITS.items()
    },
)


class EVGridState(State):
    """The session's episode: scenario, seed, progress, KPIs and the whole world."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, arbitrary_types_allowed=True
    )

    scenario: str | None = Field(
        default=None, description="Scenario name (null before the first reset)."
    )
    seed: int | None = Field(default=None, description="Seed of the episode.")
    done: bool = Field(default=False, description="Whether the episode has ended.")
    tick: int = Field(default=0, description="Current tick.")
    n_ticks: int = Field(default=0, description="Ticks in the episode.")
    clock: str = Field(default="", description="Clock time HH:MM.")
    kpis: KPIs | None = Field(  # type: ignore[valid-type]
        default=None, description="KPIs so far (null before the first reset)."
    )
    world: dict[str, Any] = Field(
        default_factory=dict,
        description="The whole simulator state (EVGridEnv.state()): stations, "
        "feeders, EVs, signals.",
    )


class EVGridResetParams(_Strict):
    """What ``reset`` accepts: the /ws reset message's data and HTTP /reset's body."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"seed": 7, "scenario": "evening_peak"}, {}],
        },
    )

    seed: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=2**63 - 1,
        description="Non-negative seed; omitted = a random one (reported in state).",
    )
    scenario: str | None = Field(
        default=None,
        description="Scenario name (see /metadata); omitted = evening_peak.",
    )
    episode_id: str | None = Field(
        default=None, max_length=255, description="Your id for the episode."
    )


class EVGridStepRequest(_Strict):
    """HTTP ``POST /step``'s body: the action, as the /ws step message's data."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"action": {"text": "DEFER E1 15"}}]},
    )

    action: EVGridAction = Field(description="The action, as a /ws step's data.")
    timeout_s: float | None = Field(
        default=None, gt=0, description="[s] OpenEnv's step timeout; not used here."
    )
    request_id: str | None = Field(
        default=None, max_length=255, description="Your id for the request."
    )


# --- Errors -------------------------------------------------------------------------


class FieldError(_Strict):
    """One field's problem, as pydantic names it (the input is not quoted back)."""

    type: str = Field(description="Kind of problem, e.g. 'extra_forbidden'.")
    loc: list[str | int] = Field(description="Where: the path to the field.")
    msg: str = Field(description="What is wrong, in words.")


class EVGridErrorReply(_Strict):
    """An HTTP error reply; a /ws error frame's data carries the same code and text."""

    code: str = Field(
        description="INVALID_JSON (400, 413), VALIDATION_ERROR (422) or "
        "EXECUTION_ERROR (409): the same codes as /ws error frames; TIMEOUT (408): "
        "the body did not arrive in time."
    )
    message: str = Field(description="The problem, in words.")
    detail: list[FieldError] = Field(description="The fields at fault, if any.")
