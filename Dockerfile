# EV Grid Oracle OpenEnv server, for a Hugging Face Docker Space (port 8000).
# In the Space's README front matter set `sdk: docker` and `app_port: 8000`.
# Build and run locally: docker build -t evgrid . && docker run -p 8000:8000 evgrid
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    EVGRID_MAX_SESSIONS=128 \
    EVGRID_SESSION_TIMEOUT_S=300 \
    EVGRID_ALLOWED_ORIGINS=

# Spaces run the container as uid 1000.
RUN useradd --create-home --uid 1000 user
WORKDIR /home/user/app

# Only what the server needs: the core, the CLI, the OpenEnv package.
COPY pyproject.toml README.md openenv.yaml server.py ./
COPY evgrid_core ./evgrid_core
COPY evgrid_cli ./evgrid_cli
COPY evgrid_openenv ./evgrid_openenv
RUN pip install ".[server]"

USER user
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
# The server binds 127.0.0.1 unless told otherwise; a Space must listen on every
# interface, so the host is set here. Browser pages may open /ws only from the
# origins in EVGRID_ALLOWED_ORIGINS (none: trainers send no Origin and are let in).
CMD ["uvicorn", "server:app", "--host", "0.0.0.0", "--port", "8000", \
     "--ws-per-message-deflate", "false"]
