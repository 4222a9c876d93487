"""llama.cpp's own grammar check, through its public sampler API.

``grammar_accepts(llm, gbnf, text)`` feeds ``text``'s tokens one by one to a
llama.cpp grammar sampler: each must keep a finite logit (allowed), and after the
last one an end-of-generation token must be allowed (the grammar is complete).
"""

from __future__ import annotations

import ctypes
import math


def grammar_accepts(llm, gbnf: str, text: str) -> bool:
    import llama_cpp

    vocab = llm._model.vocab
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode(), b"root")
    if not sampler:
        raise ValueError("llama.cpp could not parse the grammar")
    eos = llama_cpp.llama_vocab_eos(vocab)
    try:
        tokens = (
            llm.tokenize(text.encode(), add_bos=False, special=False) if text else []
        )
        for i, tok in enumerate([*tokens, eos]):
            data = (llama_cpp.llama_token_data * 1)(
                llama_cpp.llama_token_data(tok, 0.0, 0.0)
            )
            arr = llama_cpp.llama_token_data_array(data, 1, -1, False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(arr))
            if math.isinf(data[0].logit):
                return False
            if i < len(tokens):
                llama_cpp.llama_sampler_accept(sampler, tok)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)
