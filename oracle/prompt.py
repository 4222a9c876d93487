"""The Oracle's prompt: one ChatML conversation, built the same way for training and inference.

Layout (Qwen2.5-Instruct's ChatML)::

    <|im_start|>system
    {SYSTEM_MESSAGE}
    {action contract, one template per line}<|im_end|>
    <|im_start|>user
    {the core's compact observation text}<|im_end|>
    <|im_start|>assistant

The system turn never changes between decisions, so it is a static prefix that
llama.cpp keeps in its KV cache: only the observation is read anew each step.
"""

from __future__ import annotations

from evgrid_core import Observation, action_contract, render_text

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
DEFAULT_MAX_STATIONS = 8  # stations listed in the observation text (nearest first)

SYSTEM_MESSAGE = (
    "You dispatch electric vehicles to charging stations in Bengaluru. "
    "Each turn you decide the REQUEST shown: route the EV to a listed station and "
    "charger kind (SLOW 7 kW AC, FAST 30 kW DC, ULTRA 150 kW DC), defer it, or cap a "
    "station's power (LOAD_SHIFT) when its feeder will overload. Keep waits short, "
    "serve CRITICAL EVs before their deadline, keep feeders under 100% load, and "
    "prefer cheap, renewable energy.\n"
    "Answer with exactly one action line and nothing else:"
)


def system_message() -> str:
    """The static system turn: the task and the answer contract from the core."""
    return SYSTEM_MESSAGE + "\n" + action_contract()


def observation_text(
    obs: Observation | str, max_stations: int = DEFAULT_MAX_STATIONS
) -> str:
    """The user turn: the core's compact observation (``render_text``), or given text."""
    if isinstance(obs, str):
        return obs
    return render_text(obs, max_stations=max_stations)


def chat_messages(
    obs: Observation | str, max_stations: int = DEFAULT_MAX_STATIONS
) -> list[dict[str, str]]:
    """The conversation as role/content messages (what TRL and chat templates take)."""
    return [
        {"role": "system", "content": system_message()},
        {"role": "user", "content": observation_text(obs, max_stations)},
    ]


def to_chatml(
    messages: list[dict[str, str]], add_generation_prompt: bool = True
) -> str:
    """Render messages as ChatML text, exactly as Qwen2.5's chat template does."""
    text = "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages)
    return text + (f"{IM_START}assistant\n" if add_generation_prompt else "")


def build_prompt(
    obs: Observation | str, max_stations: int = DEFAULT_MAX_STATIONS
) -> str:
    """The full prompt text for one decision, ending where the model's answer begins.

    Training (issue 7) and inference (``GGUFPolicy``) both call this, so the model
    is always asked the same way it was taught.
    """
    return to_chatml(chat_messages(obs, max_stations), add_generation_prompt=True)


def static_prefix() -> str:
    """The part of every prompt that never changes (cached between decisions)."""
    return to_chatml([{"role": "system", "content": system_message()}], False) + (
        f"{IM_START}user\n"
    )
