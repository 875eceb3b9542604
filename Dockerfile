# arena daemon image. The install steps are the README's ("Install") so the tested path is the
# one that ships. Point it at PostgreSQL with ARENA_DATABASE_URL and pass OPENROUTER_API_KEY:
#   docker build -t arena .
#   docker run -e ARENA_DATABASE_URL=postgresql+psycopg://arena:secret@db/arena \
#              -e OPENROUTER_API_KEY=sk-or-v1-... arena
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ARENA_LOGGING__JSON_LOGS=true

WORKDIR /app
RUN useradd --create-home --uid 1000 arena
COPY pyproject.toml README.md config.yaml ./
COPY arena ./arena
COPY prompts ./prompts
COPY migrations ./migrations
RUN python3 -m venv /app/.venv && /app/.venv/bin/pip install -e . \
    && mkdir -p /data && chown arena /data
ENV PATH=/app/.venv/bin:$PATH \
    ARENA_DATABASE_URL=sqlite:////data/arena.db

USER arena
VOLUME ["/data"]
# `arena run` migrates the database on start, then runs every job on its schedule until
# SIGTERM (docker stop), finishing or safely abandoning the job in flight.
STOPSIGNAL SIGTERM
CMD ["arena", "run"]
