"""How good is a checkpoint: validity without a grammar, an episode under the grammar,
and held-out KPIs against the heuristics.

Validity is measured on held-out decision states (seeds training never sees), with
greedy decoding and no grammar: it is what the model has learnt, not what the
grammar forces. The exported GGUF then plays whole episodes through the Oracle's
``GGUFPolicy`` (grammar on), exactly as ``evgrid eval --policy oracle`` runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evgrid_core import Invalid, aggregate, parse_action

from .data import StateCache

# --- Validity of an HF model, no grammar ------------------------------------------


def generate_actions(
    model: Any, tok: Any, prompts: list[list[dict[str, str]]], *, max_new_tokens: int
) -> list[str]:
    """Greedy completions (text) of chat prompts, batched with left padding."""
    import torch

    texts = [
        tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
    side = tok.padding_side
    tok.padding_side = "left"
    try:
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    finally:
        tok.padding_side = side
    enc = {k: v.to(model.device) for k, v in enc.items()}
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    if was_training:
        model.train()
    new = out[:, enc["input_ids"].shape[1] :]
    return [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]


def validity(
    model: Any,
    tok: Any,
    rows: list[dict[str, Any]],
    *,
    max_new_tokens: int = 16,
    batch_size: int = 16,
    cache: StateCache | None = None,
) -> dict[str, Any]:
    """Share of rows where the model's answer parses, and is valid in that state."""
    cache = cache or StateCache()
    answers: list[str] = []
    for i in range(0, len(rows), batch_size):
        chunk = rows[i : i + batch_size]
        answers += generate_actions(
            model, tok, [r["prompt"] for r in chunk], max_new_tokens=max_new_tokens
        )
    parsed_ok = valid_ok = matches = 0
    for r, text in zip(rows, answers, strict=True):
        parsed = parse_action(text)
        if isinstance(parsed, Invalid):
            continue
        parsed_ok += 1
        env = cache.restore(r["scenario"], r["seed"], r["step"], r["generator"])
        valid_ok += env.validate(parsed)[0]
        matches += text == r["expert_action"]
    n = max(1, len(rows))
    return {
        "n": len(rows),
        "format_rate": parsed_ok / n,
        "valid_rate": valid_ok / n,
        "expert_match_rate": matches / n,
        "examples": answers[:5],
    }


def load_for_eval(path: str | Path, device: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).to(device)
    tok = AutoTokenizer.from_pretrained(str(path))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


class HFPolicy:
    """A transformers checkpoint as a core policy: greedy, no grammar, no fallback.

    For held-out KPIs where no GGUF is exported (a GPU run); invalid answers count
    as invalid, so it is the raw model's skill that is measured.
    """

    name = "oracle_hf"

    def __init__(
        self,
        model: Any,
        tok: Any,
        max_new_tokens: int = 16,
        max_stations: int = 8,
        prompt: str = "observation",
        prompt_style: str = "v1",
    ) -> None:
        self.model, self.tok, self.max_new_tokens = model, tok, max_new_tokens
        self.max_stations, self.prompt = max_stations, prompt
        self.prompt_style = prompt_style

    def reset(self, seed: int) -> None:
        pass

    def act(self, obs: Any) -> str:
        from oracle.prompt import chat_messages, decision_prompt

        options = None
        if self.prompt == "decision":  # answered by a letter naming a listed line
            options = decision_prompt(obs, self.max_stations, self.prompt_style)
            messages = list(options.messages)
        else:
            messages = chat_messages(obs, self.max_stations)
        text = generate_actions(
            self.model,
            self.tok,
            [messages],
            max_new_tokens=self.max_new_tokens,
        )[0]
        return (options.line(text) or text) if options is not None else text


# --- The exported GGUF under the grammar ----------------------------------------------


def oracle_policy(
    gguf_path: str | Path,
    fallback: str | None = "greedy_eta",
    max_stations: int = 8,
    prompt: str = "observation",
    prompt_style: str = "v1",
) -> Any:
    """The Oracle's GGUF policy (grammar on) from ``oracle.policy``."""
    import oracle.policy  # noqa: F401 - registers "oracle"
    from evgrid_core.policies import make_policy

    return make_policy(
        "oracle",
        model_path=str(gguf_path),
        fallback=fallback,
        max_stations=max_stations,
        prompt=prompt,
        prompt_style=prompt_style,
    )


def gguf_episode(
    gguf_path: str | Path,
    scenario: str,
    seed: int,
    max_stations: int = 8,
    prompt: str = "observation",
    prompt_style: str = "v1",
) -> dict[str, Any]:
    """One full episode of the exported GGUF under the grammar, with no fallback:
    every decision is the model's own, so ``grammar_decisions == steps`` shows the
    GGUF acted throughout and ``invalid_action_pct`` is its true rate."""
    from evgrid_core import EVGridEnv

    policy = oracle_policy(gguf_path, None, max_stations, prompt, prompt_style)
    env = EVGridEnv()
    obs = env.reset(seed=seed, scenario=scenario)
    policy.reset(seed)
    sources: dict[str, int] = {}
    while not env.done:
        env.step(policy.act(obs))
        src = policy.last_debug.get("source", "?")
        sources[src] = sources.get(src, 0) + 1
        obs = env.observation()
    kpis = env.kpi_summary()
    return {
        "scenario": scenario,
        "seed": seed,
        "done": env.done,
        "return": env.kpis.total_return,
        "steps": env.steps,
        "grammar_decisions": sources.get("grammar", 0),
        "sources": sources,
        "invalid_action_pct": kpis["invalid_action_pct"],
        "latency": policy.latency_summary(),
        "kpis": kpis,
    }


def heldout_kpis(
    gguf_path: str | Path | None,
    scenarios: tuple[str, ...],
    seeds: list[int],
    baselines: tuple[str, ...],
    hf_policy: Any = None,
    max_stations: int = 8,
    prompt: str = "observation",
    prompt_style: str = "v1",
) -> dict[str, Any]:
    """Mean return and aggregated KPIs per policy on held-out (scenario, seed) pairs."""
    from evgrid_core.policies import make_policy
    from evgrid_core.rollout import run_episode

    makers: dict[str, Any] = {b: (lambda b=b: make_policy(b)) for b in baselines}
    if hf_policy is not None:
        makers = {"oracle_hf": lambda: hf_policy, **makers}
    if gguf_path is not None:
        makers = {
            "oracle": lambda: oracle_policy(
                gguf_path,
                max_stations=max_stations,
                prompt=prompt,
                prompt_style=prompt_style,
            ),
            **makers,
        }
    table: dict[str, Any] = {}
    for name, make in makers.items():
        policy = make()
        results = [run_episode(policy, sc, s) for sc in scenarios for s in seeds]
        returns = [r.ret for r in results]
        table[name] = {
            "episodes": len(results),
            "mean_return": sum(returns) / len(returns),
            "returns": returns,
            "kpis": aggregate(r.kpis for r in results),
        }
    return table
