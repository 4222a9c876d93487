"""The adversarial set: policies that try to break the env (text that is not an
action, impossible ROUTEs, DEFER and LOAD_SHIFT abuse, the typed-API exploit once
found). The anti-hack tests play them; registered by name in ``policies.py``."""

from __future__ import annotations

import numpy as np

from .actions import Action, ChargerKind, Defer, LoadShift, Route
from .baselines import GreedyETA, ScoredPolicy
from .chargers import vehicle_kw
from .config import DEFAULTS
from .observation import Observation


# --- Adversarial set ----------------------------------------------------------------------
class AlwaysDefer(ScoredPolicy):
    """Defers every request as long as possible (then defers anyway: invalid)."""

    name = "always_defer"

    def act(self, obs: Observation) -> Action | str:
        r = obs.request
        if r is None:
            return "NO_REQUEST"
        return Defer(r.id, obs.defer_options[-1] if obs.defer_options else 60)


class AlwaysInvalid(ScoredPolicy):
    """Answers with text that is not an action."""

    name = "always_invalid"

    def act(self, obs: Observation) -> Action | str:
        return "I think the EV should charge somewhere nice."


class AllToOneStation(ScoredPolicy):
    """Sends every EV to S1 (Majestic) on its fastest kind, valid or not."""

    name = "all_to_one_station"

    def act(self, obs: Observation) -> Action | str:
        r = obs.request
        if r is None:
            return "NO_REQUEST"
        ultra = vehicle_kw(ChargerKind.ULTRA, r.max_ac_kw, r.max_dc_kw) > 0
        kind = ChargerKind.ULTRA if ultra else ChargerKind.SLOW
        return Route(r.id, 1, kind)


class LoadShiftSpam(GreedyETA):
    """Caps every station it can, every tick, then routes greedily."""

    name = "load_shift_spam"

    def act(self, obs: Observation) -> Action | str:
        if obs.load_shifts_left > 0:
            free = np.flatnonzero(~obs.shifted)
            if len(free):
                return LoadShift(int(self.rng.choice(free)) + 1, 25, 60)
        return super().act(obs)


class DeferIntoThePast(GreedyETA):
    """Typed DEFERs of -5 minutes for EVs whose patience outlasts the episode, else greedy."""

    # The exploit once found in the typed API: such an EV was scheduled into a past
    # tick, never came back and was never billed. The validator refuses it now.
    name = "defer_into_the_past"

    def act(self, obs: Observation) -> Action | str:
        r = obs.request
        left = (obs.n_ticks - obs.tick) * DEFAULTS.tick_minutes  # [min] to the end
        if r is not None and r.patience_left_min > left:
            return Defer(r.id, -5)
        return super().act(obs)


ADVERSARIAL = (
    AlwaysDefer,
    AlwaysInvalid,
    AllToOneStation,
    LoadShiftSpam,
    DeferIntoThePast,
)
