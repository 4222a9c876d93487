"""Tokenisation parity: the tiny model's prompt gives the same token ids in
tiktoken (qwen.tiktoken itself), transformers (the converted tokenizer.json) and
llama.cpp (the GGUF's vocabulary and qwen2 pre-tokenizer)."""

from __future__ import annotations

import unicodedata

import pytest

from evgrid_core import EVGridEnv
from evgrid_core.policies import make_policy
from oracle.prompt import build_prompt, chat_messages
from oracle.tiny_model import QWEN2_PATTERN, QWEN25_SPECIAL_TOKENS, qwen_tiktoken_path

TRICKY = [
    "ROUTE E17 S5 FAST",
    "LOAD_SHIFT S25 75 60",
    "17:05 tick 12345/48 SoC 11%->80% Rs4.50/kWh",
    "  two  spaces and trailing   \n\n\nnewlines\r\n",
    "don't WE'LL it's",
    "Bengaluru ಬೆಂಗಳೂರು ₹4.50 — café (NFC: cafe\u0301)",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
]


@pytest.fixture(scope="module")
def tiktoken_encoding():
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(qwen_tiktoken_path()))
    specials = {t: 151_643 + i for i, t in enumerate(QWEN25_SPECIAL_TOKENS)}
    return tiktoken.Encoding(
        "qwen2.5", pat_str=QWEN2_PATTERN, mergeable_ranks=ranks, special_tokens=specials
    )


@pytest.fixture(scope="module")
def hf_tokenizer(tiny_hf_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_hf_dir)


def prompts() -> list[str]:
    out = []
    for scenario, seed in (("evening_peak", 0), ("feeder_fault", 3), ("heatwave", 7)):
        env = EVGridEnv()
        obs = env.reset(seed=seed, scenario=scenario)
        policy = make_policy("greedy_eta")
        for _ in range(5):
            env.step(policy.act(obs))
            obs = env.observation()
        out.append(build_prompt(obs))
    return out


def tiktoken_ids(enc, text: str) -> list[int]:
    return enc.encode(unicodedata.normalize("NFC", text), allowed_special="all")


def test_special_tokens_have_qwen25_ids(hf_tokenizer) -> None:
    assert hf_tokenizer.convert_tokens_to_ids(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|file_sep|>"]
    ) == [151643, 151644, 151645, 151664]
    assert len(hf_tokenizer) == 151_665


def test_transformers_matches_tiktoken(hf_tokenizer, tiktoken_encoding) -> None:
    for text in TRICKY + prompts():
        hf = hf_tokenizer.encode(text, add_special_tokens=False)
        assert hf == tiktoken_ids(tiktoken_encoding, text), text[:80]
        assert hf_tokenizer.decode(hf) == unicodedata.normalize("NFC", text)


def test_chat_template_renders_the_oracle_prompt(hf_tokenizer) -> None:
    env = EVGridEnv()
    obs = env.reset(seed=0, scenario="evening_peak")
    templated = hf_tokenizer.apply_chat_template(
        chat_messages(obs), tokenize=False, add_generation_prompt=True
    )
    assert templated == build_prompt(obs)


def test_llama_cpp_matches_tiktoken(tiny_llama, tiktoken_encoding) -> None:
    """llama.cpp does not apply the NFC normaliser itself: texts in NFC match, and the
    Oracle's prompts are already NFC (checked)."""
    for p in prompts():
        assert unicodedata.normalize("NFC", p) == p
    for text in TRICKY + prompts():
        nfc = unicodedata.normalize("NFC", text)
        ids = tiny_llama.tokenize(nfc.encode(), add_bos=False, special=True)
        assert ids == tiktoken_ids(tiktoken_encoding, text), text[:80]


def test_prompt_length_in_tokens(tiny_llama, hf_tokenizer) -> None:
    lengths = [
        len(tiny_llama.tokenize(p.encode(), add_bos=False, special=True))
        for p in prompts()
    ]
    assert lengths == [len(hf_tokenizer.encode(p)) for p in prompts()]
    assert all(250 <= n <= 700 for n in lengths), lengths
