"""The Oracle: the LLM policy's prompt, its action grammar and its GGUF runtime.

``oracle.prompt`` and ``oracle.grammar`` need only the core. ``oracle.policy``
(``GGUFPolicy``, registered as ``"oracle"``) needs llama-cpp-python, imported when
a model is loaded. ``oracle.tiny_model`` and ``oracle.gguf_export`` build and
convert models offline (transformers, torch, the vendored llama.cpp converter).
"""
