"""``GGUFPolicy``: the Oracle as a policy, a GGUF model run by llama-cpp-python.

With no model named, it is the trained Oracle: SmolLM2-135M-Instruct with the
shipped LoRA adapter ``oracle/weights/oracle-smollm2-lora.gguf`` folded into its
weights, in Q8_0 (``oracle.smollm2.oracle_gguf``, built by the set-up), asked with
``oracle.prompt.decision_prompt``, which lists the candidate actions under letters,
and answers one letter under a grammar over those letters (one forward pass). With ``model_path`` (``--model``) any ChatML GGUF is asked with the
whole text observation (``build_prompt``) under the per-step grammar
(``oracle.grammar.step_grammar``).

Each decision: build the prompt, decode under the grammar with ``max_tokens`` sized
for the longest action, check the line against the actions valid now, and answer
it. The prompt's head is the same every step, so llama.cpp reuses its KV cache and
only the rest is read anew. If the model fails (an error, or a line that is not a
valid action, possible only without the grammar) a named heuristic decides instead
and the reason is logged. ``last_debug`` tells a viewer what happened.

Registered with the core as ``"oracle"``: ``make_policy("oracle")`` (the trained
Oracle) or ``make_policy("oracle", model_path="model.gguf")``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from evgrid_core import Action, Observation, format_action
from evgrid_core.optional import require
from evgrid_core.policies import Policy, make_policy, register_policy

from .gguf_export import LLAMA_CPP_NOTE
from .grammar import allowed_actions, lines_grammar, max_answer_tokens, step_grammar
from .prompt import (
    DECISION_STATIONS,
    DEFAULT_MAX_STATIONS,
    IM_END,
    PROMPT_STYLES,
    build_prompt,
    decision_prompt,
)
from .shipped import SHIPPED_ADAPTER, SHIPPED_PROMPT

log = logging.getLogger(__name__)
PROMPTS = ("decision", "observation")


def shipped_prompt_style(path: Path | None = None) -> str:
    """The decision prompt's style the shipped Oracle is asked in
    (``oracle.prompt.PROMPT_STYLES``: the one its adapter was trained on, or that
    with a listing on top, ``[data] serve_prompt_style``; ``oracle/weights/oracle.json``,
    written by ``training.oracle_sft --ship``; "v1" where there is none)."""
    path = path or SHIPPED_PROMPT
    if not path.is_file():
        return "v1"
    style = json.loads(path.read_text()).get("prompt_style", "v1")
    if style not in PROMPT_STYLES:
        raise ValueError(
            f"{path}: prompt_style {style!r} is not one of {PROMPT_STYLES}"
        )
    return style


def shipped_oracle() -> Path:
    """The trained Oracle's GGUF: the package's SmolLM2 with the shipped adapter
    folded in (``oracle.smollm2.oracle_gguf``), built on first use (seconds)."""
    return trained_oracle(SHIPPED_ADAPTER)


def trained_oracle(adapter: Path) -> Path:
    """The package's SmolLM2 with ``adapter`` (a LoRA GGUF) folded in."""
    from .smollm2 import oracle_gguf

    if not adapter.is_file():
        what = (
            "the trained Oracle's adapter" if adapter == SHIPPED_ADAPTER else "adapter"
        )
        raise ValueError(f"{what} {adapter} is missing")
    try:
        return oracle_gguf(adapter)
    except FileNotFoundError as e:
        raise ValueError(
            f"the trained Oracle needs its base model: {e} "
            "(bash scripts/setup.sh test), or give a GGUF with --model PATH"
        ) from e


def load_llama(
    model_path: str | Path,
    *,
    n_ctx: int,
    threads: int,
    verbose: bool,
    lora_path: str | Path | None = None,
):
    """Open a GGUF (and a LoRA adapter GGUF over it) with llama-cpp-python
    (imported here: it is an optional extra)."""
    path = Path(model_path)
    if not path.is_file():
        raise ValueError(f"no GGUF model at {path}")
    if lora_path is not None and not Path(lora_path).is_file():
        raise ValueError(f"no LoRA adapter at {lora_path}")
    # llama.cpp's OpenMP threads spin while they wait for each other; on a CPU shared
    # with other work that made 2 threads 30x slower than 1 here. Passive waiting
    # fixes it (must be set before the library loads; an explicit setting wins).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    Llama = require("llama_cpp", "the Oracle", "oracle", package="llama-cpp-python",
                    note=LLAMA_CPP_NOTE).Llama  # fmt: skip
    return Llama(
        model_path=str(path),
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        n_batch=512,
        seed=0,
        verbose=verbose,
        lora_path=str(lora_path) if lora_path is not None else None,
    )


def _text(action: Action | str) -> str:
    return action if isinstance(action, str) else format_action(action)


class GGUFPolicy:
    """An LLM policy: the trained Oracle, or a GGUF chat model (any ChatML model)."""

    name = "oracle"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        adapter: str | Path | None = None,
        lora_path: str | Path | None = None,
        prompt: str | None = None,
        use_grammar: bool = True,
        fallback: str | None = "greedy_eta",
        load_shift: bool = True,
        max_stations: int | None = None,
        prompt_style: str | None = None,
        temperature: float = 0.0,
        n_ctx: int = 2048,
        threads: int | None = None,
        verbose: bool = False,
        llama: Any = None,
    ) -> None:
        """Load the trained Oracle, or ``model_path`` (or use an open ``llama``).

        ``prompt``: ``"decision"`` (``decision_prompt``, grammar over its listed
        lines; the trained Oracle's default) or ``"observation"`` (``build_prompt``,
        grammar over every valid action; the default with ``model_path`` or
        ``llama``). ``max_stations``: stations the prompt lists (3 or 8 by prompt).
        ``lora_path``: a LoRA adapter GGUF applied over ``model_path``.
        ``adapter``: a LoRA adapter GGUF trained as the shipped one is, asked as the
        shipped Oracle is (folded into the package's SmolLM2, the decision prompt):
        to try an adapter before shipping it (``evgrid compare --adapter``).
        ``prompt_style``: how the decision prompt's options read (default: the
        shipped adapter's, ``shipped_prompt_style``).

        ``threads``: CPU threads for llama.cpp (default ``EVGRID_ORACLE_THREADS``,
        else all cores; on a machine shared with other busy processes 1 is faster,
        as llama.cpp's threads wait on each other).

        ``fallback``: the heuristic that decides when the model fails (``None``:
        answer the model's line as it is, to measure its raw validity).
        ``load_shift=False`` keeps LOAD_SHIFT out of the grammar (the decision
        prompt never lists it).
        """
        shipped = False
        if adapter is not None and (model_path or lora_path or llama is not None):
            raise ValueError(
                "adapter is asked alone: not with model_path, lora_path or llama"
            )
        if llama is None:
            model_path = model_path or os.environ.get("EVGRID_ORACLE_MODEL")
            if adapter is not None:
                model_path, shipped = trained_oracle(Path(adapter)), True
            elif not model_path:
                model_path = shipped_oracle()
                shipped = True
            llama = load_llama(
                model_path,
                n_ctx=n_ctx,
                threads=threads
                or int(os.environ.get("EVGRID_ORACLE_THREADS", 0))
                or os.cpu_count()
                or 1,
                verbose=verbose,
                lora_path=lora_path,
            )
        prompt = prompt or ("decision" if shipped else "observation")
        if prompt not in PROMPTS:
            raise ValueError(f"prompt is one of {PROMPTS}, not {prompt!r}")
        self.llm = llama
        self.model_path = str(model_path) if model_path else None
        self.lora_path = str(lora_path) if lora_path else None
        self.prompt = prompt
        self.prompt_style = prompt_style or shipped_prompt_style()
        if self.prompt_style not in PROMPT_STYLES:
            raise ValueError(
                f"prompt_style is one of {PROMPT_STYLES}, not {self.prompt_style!r}"
            )
        self.use_grammar = use_grammar
        self.load_shift = load_shift
        self.max_stations = max_stations or (
            DECISION_STATIONS if prompt == "decision" else DEFAULT_MAX_STATIONS
        )
        self.temperature = temperature
        self.max_tokens = max_answer_tokens()
        self.fallback_name = fallback
        self.fallback: Policy | None = make_policy(fallback) if fallback else None
        self.latencies_ms: list[float] = []
        self.decisions = 0
        self.fallbacks = 0
        self.seed = 0
        self.last_debug: dict[str, Any] = {}
        self._lock = threading.Lock()

    # --- Policy protocol -------------------------------------------------------------
    def reset(self, seed: int) -> None:
        self.seed = int(seed)
        self.decisions = 0
        if self.fallback is not None:
            self.fallback.reset(seed)

    def act(self, obs: Observation) -> str:
        """One decision as an action line (thread-safe; one decode at a time)."""
        with self._lock:
            return self._act(obs)

    # --- Decision ----------------------------------------------------------------------
    def _act(self, obs: Observation) -> str:
        start = time.perf_counter()
        self.decisions += 1
        debug: dict[str, Any] = {
            "raw": "",  # the model's text (a letter, with the decision prompt)
            "line": "",  # the action line it names
            "source": "fallback",
            "latency_ms": 0.0,
            "prompt_tokens": 0,
            "reason": "",
        }
        allowed = allowed_actions(obs)
        grammar = None
        if obs.request is None or obs.done:
            debug["reason"] = "no request to decide"
        elif not allowed:
            debug["reason"] = "no valid action exists for this request"
        else:
            try:
                options = None  # the decision prompt's options (answered by letter)
                if self.prompt == "decision":
                    options = decision_prompt(obs, self.max_stations, self.prompt_style)
                    if not options.lines:
                        raise LookupError("no ROUTE or DEFER is valid for this request")
                    prompt, gbnf = options.text, lines_grammar(options.letters)
                    # What it was offered, for a viewer ("why", evgrid_render.why).
                    debug["options"] = list(
                        zip(options.letters, options.lines, strict=True)
                    )
                else:
                    prompt = build_prompt(obs, self.max_stations)
                    gbnf = step_grammar(obs, load_shift=self.load_shift)
                if self.use_grammar:
                    from llama_cpp import LlamaGrammar

                    assert gbnf is not None  # allowed is not empty
                    grammar = LlamaGrammar.from_string(gbnf, verbose=False)
                out = self.llm.create_completion(
                    prompt,
                    max_tokens=1 if options is not None else self.max_tokens,
                    temperature=self.temperature,
                    top_k=0 if self.temperature > 0 else 40,
                    top_p=1.0,
                    min_p=0.0,
                    repeat_penalty=1.0,
                    stop=[IM_END, "\n"],
                    grammar=grammar,
                    seed=(self.seed * 100_003 + self.decisions) % 2**31,
                )
                debug["raw"] = out["choices"][0]["text"]
                debug["prompt_tokens"] = int(out["usage"]["prompt_tokens"])
                line = debug["raw"].strip()
                if options is not None:  # a letter: the line it names, if any
                    line = options.line(line) or line
                debug["line"] = line
                if line in allowed or (self.fallback is None and line):
                    debug["source"] = "grammar" if grammar is not None else "model"
                else:
                    debug["reason"] = f"model answered {line[:60]!r}: not valid now"
            except Exception as e:  # noqa: BLE001 - any model failure falls back
                debug["reason"] = f"model error: {type(e).__name__}: {e}"
        if debug["source"] == "fallback":
            action = self._fallback_action(obs, debug)
        else:
            action = debug["line"]
        debug["action"] = action
        debug["latency_ms"] = (time.perf_counter() - start) * 1000.0
        self.latencies_ms.append(debug["latency_ms"])
        self.last_debug = debug
        return action

    def _fallback_action(self, obs: Observation, debug: dict[str, Any]) -> str:
        if self.fallback is None:
            return debug.get("line", "")
        self.fallbacks += 1
        if obs.request is not None:
            log.warning(
                "oracle: %s decides E%d instead: %s",
                self.fallback_name,
                obs.request.id,
                debug["reason"],
            )
        return _text(self.fallback.act(obs))

    # --- Figures -----------------------------------------------------------------------
    def latency_summary(self) -> dict[str, float]:
        """Decisions so far: count, mean, p50 and p95 latency [ms], decisions/s."""
        lat = np.asarray(self.latencies_ms, dtype=float)
        if lat.size == 0:
            return {"decisions": 0}
        return {
            "decisions": int(lat.size),
            "mean_ms": float(lat.mean()),
            "p50_ms": float(np.percentile(lat, 50)),
            "p95_ms": float(np.percentile(lat, 95)),
            "decisions_per_s": float(1000.0 / lat.mean()),
            "fallbacks": self.fallbacks,
        }


register_policy(
    "oracle",
    GGUFPolicy,
    "LLM Oracle: SmolLM2-135M + a LoRA trained on the hindsight optimum, under a "
    "grammar (--model PATH: another GGUF)",
)
