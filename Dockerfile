# arena daemon image: the wheel, built in a first stage and installed (not editable) into a
# virtual environment in the second; runs as a non-root user.
#   docker build -t arena .
#   docker run -e ARENA_DATABASE_URL=postgresql+psycopg://arena:secret@db/arena \
#              -e OPENROUTER_API_KEY=sk-or-v1-... arena

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md METHODOLOGY.md ./
COPY arena ./arena
RUN python3 -m pip wheel --no-deps -w /dist .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ARENA_LOGGING__JSON_LOGS=true
COPY --from=build /dist /dist
RUN python3 -m venv /opt/arena \
    && /opt/arena/bin/pip install --no-cache-dir /dist/*.whl \
    && rm -rf /dist \
    && useradd --create-home --uid 1000 arena \
    && mkdir -p /data /etc/arena && chown arena /data
COPY config.yaml /etc/arena/config.yaml
ENV PATH=/opt/arena/bin:$PATH \
    ARENA_CONFIG=/etc/arena/config.yaml \
    ARENA_DATABASE_URL=sqlite:////data/arena.db

USER arena
WORKDIR /data
VOLUME ["/data"]
# The dashboard, its JSON API and /healthz, /readyz and /metrics, served by the daemon.
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/healthz', timeout=5)"]
# `arena run` migrates the database on start, then runs every job on its schedule until
# SIGTERM (docker stop), finishing or safely abandoning the job in flight; --http serves the
# read-only dashboard beside it.
STOPSIGNAL SIGTERM
CMD ["arena", "run", "--http", "0.0.0.0:8000"]
