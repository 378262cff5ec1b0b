"""The one place that reads the environment. Created once by an entry point and passed down."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    cairn_home: Path = Field(default=Path(".cairn"), alias="CAIRN_HOME")
    # Unset: the state is SQLite at CAIRN_HOME/cairn.db. `postgresql://…`: the state store is that database.
    database_url: SecretStr | None = Field(default=None, alias="CAIRN_DATABASE_URL")  # it may hold a password
    access_file: Path | None = Field(default=None, alias="CAIRN_ACCESS_FILE")

    slack_bot_token: str | None = Field(default=None, alias="SLACK_BOT_TOKEN")
    slack_app_token: str | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_signing_secret: str | None = Field(default=None, alias="SLACK_SIGNING_SECRET")
    slack_api_url: str = Field(default="https://slack.com/api/", alias="SLACK_API_URL")
    escalation_channel: str | None = Field(default=None, alias="CAIRN_ESCALATION_CHANNEL")
    digest_channel: str | None = Field(default=None, alias="CAIRN_DIGEST_CHANNEL")
    ask_channels: list[str] = Field(default_factory=list, alias="CAIRN_ASK_CHANNELS")

    openai_base_url: str | None = Field(default=None, alias="OPENAI_BASE_URL")
    openai_api_key: str | None = Field(default=None, alias="OPENAI_API_KEY")
    chat_model: str | None = Field(default=None, alias="CAIRN_CHAT_MODEL")
    llm_timeout_s: float = Field(default=30.0, alias="CAIRN_LLM_TIMEOUT")

    qdrant_url: str | None = Field(default=None, alias="QDRANT_URL")
    qdrant_api_key: str | None = Field(default=None, alias="QDRANT_API_KEY")
    qdrant_collection: str = Field(default="cairn", alias="QDRANT_COLLECTION")

    rerank_model: Path | None = Field(default=None, alias="CAIRN_RERANK_MODEL")
    rerank_min_score: float = Field(default=0.32, alias="RERANK_MIN_SCORE")
    multilingual_dense: bool = Field(default=True, alias="CAIRN_MULTILINGUAL_DENSE")
    leg_timeout_s: float = Field(default=2.0, alias="CAIRN_LEG_TIMEOUT")
    rerank_timeout_s: float = Field(default=2.0, alias="CAIRN_RERANK_TIMEOUT")

    max_file_mb: float = Field(default=20.0, alias="CAIRN_MAX_FILE_MB")
    chunk_tokens: int = Field(default=400, alias="CAIRN_CHUNK_TOKENS")
    chunk_overlap: int = Field(default=50, alias="CAIRN_CHUNK_OVERLAP")
    job_max_attempts: int = Field(default=3, alias="CAIRN_JOB_MAX_ATTEMPTS")
    min_free_disk_mb: int = Field(default=256, ge=0, alias="CAIRN_MIN_FREE_DISK_MB")
    max_chunks: int = Field(default=3000, ge=1, alias="CAIRN_MAX_CHUNKS")
    job_timeout_s: float = Field(default=900.0, gt=0, alias="CAIRN_JOB_TIMEOUT")

    escalation_deadline_hours: float = Field(default=24.0, alias="CAIRN_ESCALATION_DEADLINE_HOURS")
    digest_day: str = Field(default="mon", alias="CAIRN_DIGEST_DAY")
    digest_time: str = Field(default="09:00", alias="CAIRN_DIGEST_TIME")
    timezone: str = Field(default="UTC", alias="CAIRN_TIMEZONE")
    trace_retention_days: int = Field(default=90, alias="CAIRN_TRACE_RETENTION_DAYS")
    # Escalation analytics (escalations/, bot/scheduler.py): topic taxonomy YAML, classifier cadence, retries.
    topics_file: Path | None = Field(default=None, alias="CAIRN_TOPICS")
    classify_minutes: float = Field(default=5.0, alias="CAIRN_CLASSIFY_MINUTES")
    label_max_attempts: int = Field(default=3, alias="CAIRN_LABEL_MAX_ATTEMPTS")

    # HTTP API (/v1/retrieve) and operations: see bot/http/app.py and store/credentials.py.
    services_file: Path | None = Field(default=None, alias="CAIRN_SERVICES_FILE")
    service_credential: SecretStr | None = Field(default=None, alias="CAIRN_SERVICE_CREDENTIAL")
    api_audience: str = Field(default="cairn", alias="CAIRN_API_AUDIENCE")
    context_max_ttl_s: int = Field(default=900, alias="CAIRN_CONTEXT_MAX_TTL")
    api_max_top_k: int = Field(default=20, alias="CAIRN_API_MAX_TOP_K")
    api_timeout_s: float = Field(default=10.0, alias="CAIRN_API_TIMEOUT")
    api_concurrency: int = Field(default=4, alias="CAIRN_API_CONCURRENCY")
    budget_user_rpm: float = Field(default=30.0, alias="CAIRN_BUDGET_USER_RPM")
    budget_service_rpm: float = Field(default=600.0, alias="CAIRN_BUDGET_SERVICE_RPM")
    pause: str = Field(default="", alias="CAIRN_PAUSE")
    controls_cache_s: float = Field(default=2.0, alias="CAIRN_CONTROLS_CACHE")
    log_content: bool = Field(default=False, alias="CAIRN_LOG_CONTENT")

    @field_validator("database_url")
    @classmethod
    def _postgresql_only(cls, value: SecretStr | None) -> SecretStr | None:
        url = value.get_secret_value().strip() if value is not None else ""
        if not url:
            return None
        if not url.startswith(("postgresql://", "postgres://")):
            raise ValueError("CAIRN_DATABASE_URL must be a postgresql:// URL (leave it unset for SQLite under"
                             " CAIRN_HOME)")
        return SecretStr(url)

    @cached_property
    def db_path(self) -> Path:
        return self.cairn_home / "cairn.db"

    @property
    def database(self) -> Path | str:
        """Where the state store lives, as `store.db.open_db` takes it: CAIRN_DATABASE_URL, or the SQLite file."""
        return self.database_url.get_secret_value() if self.database_url else self.db_path

    @cached_property
    def checkpoint_path(self) -> Path:
        return self.cairn_home / "checkpoints.db"

    @cached_property
    def index_path(self) -> Path:
        return self.cairn_home / "index"

    @cached_property
    def raw_path(self) -> Path:
        return self.cairn_home / "raw"

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)

    @property
    def services_path(self) -> Path:
        return self.services_file or self.cairn_home / "services.json"

    @property
    def paused_kinds(self) -> frozenset[str]:
        """CAIRN_PAUSE=llm,tools → {"llm", "tools"}."""
        return frozenset(k.strip().lower() for k in self.pause.split(",") if k.strip())
