"""Named, seeded scenarios: when the episode runs and what the world throws at it."""

from __future__ import annotations

from dataclasses import dataclass

from .signals import AUGUST, FEBRUARY, StateSupply


@dataclass(frozen=True, slots=True)
class FeederEvent:
    """A window in which a feeder's usable capacity (and its load) is reduced."""

    feeder: int  # feeder id (1-based)
    start_tick: int  # first tick affected (episode-relative)
    end_tick: int  # first tick no longer affected
    capacity_factor: float  # [0-1] usable capacity / nominal
    kind: str  # "dr" (demand-response request) or "fault"
    background_factor: float = 1.0  # [0-1] background load still on the feeder


@dataclass(frozen=True, slots=True)
class TransformerEvent:
    """A window in which a station's distribution transformer is a smaller one
    (a failed DT and the stand-in BESCOM puts up). Only the network grid models
    have transformers; the feeder sum does not see it."""

    station: int  # station id
    start_tick: int  # first tick affected (episode-relative)
    end_tick: int  # first tick no longer affected
    kva: float  # [kVA] the stand-in's rating


@dataclass(frozen=True, slots=True)
class StationClosure:
    station: int  # station id
    start_tick: int
    end_tick: int


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    title: str
    description: str
    start_minute: int  # [min of day] clock at tick 0
    n_ticks: int = 48  # 48 x 5 min = 4 h
    arrival_scale: float = 1.0  # x ARRIVALS_PER_HOUR
    origin_boost: tuple[tuple[str, float], ...] = ()  # (locality, weight multiplier)
    background_scale: float = 1.0  # x feeder background load
    supply: StateSupply = FEBRUARY  # the state's hydro, wind, solar and demand
    speed_scale: float = 1.0  # x road speed (rain)
    critical_scale: float = 1.0  # x chance an EV is critical
    feeder_events: tuple[FeederEvent, ...] = ()
    closures: tuple[StationClosure, ...] = ()
    transformer_events: tuple[TransformerEvent, ...] = ()


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "evening_peak",
            "Weekday evening peak",
            "17:00-21:00: commuters and cabs charge as the feeder peak (19:00) arrives.",
            17 * 60,
        ),
        Scenario(
            "morning_peak",
            "BESCOM morning peak",
            "08:00-12:00: BESCOM's recorded peaks fall at 09:45-12:00.",
            8 * 60,
            arrival_scale=0.9,
        ),
        Scenario(
            "solar_noon",
            "Solar noon surplus",
            "10:30-14:30: cheap solar-hour tariff and a high renewable share.",
            10 * 60 + 30,
            arrival_scale=1.2,
        ),
        # Heatwave: BESCOM's all-time peak, 8,444 MW on 2-May-2024, was 3.9 % above
        # Feb-2024's 8,128 MW [V] (facts §3.1): that lift [D], in the hottest hours,
        # when the normal load dips (13:00-17:00 [A]). On top of the evening peak it
        # would put the background alone above capacity, leaving dispatch nothing to do.
        Scenario(
            "heatwave",
            "Heatwave",
            "13:00-17:00 in a hot May: air-conditioning lifts background load 3.9 %.",
            13 * 60,
            background_scale=8444.0 / 8128.0,
            arrival_scale=1.1,
        ),
        Scenario(
            "festival_surge",
            "Festival surge",
            "17:00-21:00 before Deepavali: 70 % more EVs, shopping districts busy.",
            17 * 60,
            arrival_scale=1.7,
            origin_boost=(
                ("Majestic (Kempegowda Bus Stn / KSR)", 2.0),
                ("Malleshwaram", 2.0),
                ("Jayanagar (4th Block TTMC)", 2.0),
                ("Shantinagar (TTMC)", 1.5),
            ),
        ),
        # Demand response [A]: a 97 % hold leaves EV charging 5-6 % of the capacity at
        # the 19:30 peak (1.8 % on the worst of seeds 0-49); at 95 % the background
        # alone went over on some seeds, leaving dispatch nothing to do.
        Scenario(
            "demand_response",
            "Demand-response event",
            "18:00-22:00: BESCOM asks the East and South-East feeders to hold 97 % "
            "of capacity from 18:30 to 20:00.",
            18 * 60,
            feeder_events=(
                FeederEvent(2, 6, 24, 0.97, "dr"),
                FeederEvent(3, 6, 24, 0.97, "dr"),
            ),
        ),
        # Feeder fault [A]: a cable fault takes one of the feeder's two circuits out;
        # the other carries 60 % of the rating, so BESCOM keeps 60 % of the load on
        # and the 40 % beyond the fault stays dark until the repair. No neighbour can
        # take that load over: every feeder runs at 91-94 % at the evening peak
        # (city.FEEDERS). The utilisation stays as on a normal evening; the headroom
        # for EVs falls from about 450 kW to 270 kW at 19:30.
        Scenario(
            "feeder_fault",
            "Feeder fault",
            "17:00-21:00: a cable fault on the South-East feeder at 17:30 leaves 60 % "
            "of its capacity and of its customers on until 19:30; Bellandur station "
            "is dark until 18:30.",
            17 * 60,
            feeder_events=(FeederEvent(3, 6, 30, 0.60, "fault", 0.60),),
            closures=(StationClosure(10, 6, 18),),
        ),
        Scenario(
            "monsoon",
            "Monsoon evening",
            "17:00-21:00 in August: monsoon wind and hydro, clouds, rain slows traffic.",
            17 * 60,
            supply=AUGUST,
            speed_scale=0.8,
            background_scale=0.93,
        ),
        Scenario(
            "airport_rush",
            "Airport rush",
            "05:00-09:00: cabs charge for the morning flight bank; the airport hub is busy.",
            5 * 60,
            arrival_scale=1.6,
            critical_scale=1.5,
            origin_boost=(
                ("Kempegowda Intl Airport (Devanahalli)", 12.0),
                ("Yelahanka", 3.0),
                ("Hebbal", 2.0),
            ),
        ),
        Scenario(
            "quiet_night",
            "Quiet night",
            "23:00-03:00: few EVs, cheap headroom, BESCOM sites closed until 06:00.",
            23 * 60,
            arrival_scale=1.5,
        ),
        # The North feeder's tail [A]: the airport hub (400 kW, 2 ultra plugs) sits
        # 26.8 km of 11 kV line past Hebbal (docs/grid.md). At 22:00 the feeder runs
        # at about three quarters of its capacity, but its tail is already near the
        # 11 kV floor (about 0.92 p.u. against 0.91): cabs on the fast and ultra
        # plugs for the night's departures pull it below while the feeder stays
        # under its soft limit. Arrivals: the airport's night bank [A].
        Scenario(
            "airport_night",
            "Airport night bank",
            "22:00-02:00: cabs fast-charge at the airport hub for the night's "
            "departures; the North feeder has capacity, its 27 km tail has no "
            "voltage to spare (the network grid models).",
            22 * 60,
            arrival_scale=4.0,
            critical_scale=1.5,
            origin_boost=(
                ("Kempegowda Intl Airport (Devanahalli)", 30.0),
                ("Yelahanka", 3.0),
            ),
        ),
        # A failed DT [A]: BESCOM loses 7.5-7.95 % of its DTs a year, overloading
        # the cause given [V] (facts §3.2); a stand-in of 100 kVA (a BESCOM size)
        # serves Whitefield's 400 kW site until the 500 kVA unit is back. The
        # station's connection limit stays: the DT, not the feeder, binds.
        Scenario(
            "dt_failure",
            "Failed transformer",
            "10:00-14:00: Whitefield's 500 kVA transformer has failed and a 100 kVA "
            "stand-in serves the site until 13:00 (the network grid models); "
            "IT-park cabs and cars charge there at midday.",
            10 * 60,
            arrival_scale=1.2,
            origin_boost=(("Whitefield (ITPL/TTMC)", 4.0), ("Marathahalli", 2.0)),
            transformer_events=(TransformerEvent(12, 0, 36, 100.0),),
        ),
        Scenario(
            "full_day",
            "Full day",
            "00:00-24:00: 288 ticks through both peaks.",
            0,
            n_ticks=288,
        ),
    )
}
DEFAULT_SCENARIO = "evening_peak"


def get_scenario(name: str) -> Scenario:
    """Look a scenario up by name, with a helpful error."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(
            f"unknown scenario {name!r}; choose one of: {', '.join(SCENARIOS)}"
        ) from None
