"""Settings for PolicyDesk, read from POLICYDESK_* environment variables and an optional .env."""

from __future__ import annotations

from datetime import date
from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LOCAL_SECRET_KEY = "policydesk-local-only-secret-key"
LOCAL_APP_DB_PASSWORD = "policydesk-app-local"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="POLICYDESK_", env_file=".env", extra="ignore")

    ENVIRONMENT: str = "local"  # local | test | production
    DATA_DIR: Path = Path(".policydesk")
    # Not prefixed: DATABASE_URL is the conventional name operators already set.
    DATABASE_URL: str | None = Field(default=None, validation_alias="DATABASE_URL")
    # The application connects as this role, which row-level security binds (no BYPASSRLS).
    APP_DB_ROLE: str = "policydesk_app"
    APP_DB_PASSWORD: str = LOCAL_APP_DB_PASSWORD

    SECRET_KEY: str = LOCAL_SECRET_KEY

    # Sessions (OWASP ASVS 4.0 V3). None means: Secure outside local and test runs, which are
    # served over plain http (ASVS 3.4.1).
    SESSION_COOKIE_SECURE: bool | None = None
    SESSION_IDLE_MINUTES: int = Field(default=30, gt=0)  # ASVS 3.3.2: idle timeout
    SESSION_MAX_HOURS: int = Field(default=8, gt=0)  # ASVS 3.3.2: absolute lifetime, one working day

    # Sign-in throttling (ASVS 2.2.1), counted in Postgres so every worker agrees.
    LOGIN_ACCOUNT_MAX_FAILURES: int = Field(default=5, gt=0)  # per account, since its last success
    LOGIN_ADDRESS_MAX_FAILURES: int = Field(default=20, gt=0)  # per client address, any account
    LOGIN_FAILURE_WINDOW_MINUTES: int = Field(default=15, gt=0)
    LOGIN_LOCKOUT_MINUTES: int = Field(default=15, gt=0)

    # Providers: Gemini when a key is configured, offline otherwise.
    GEMINI_API_KEY: str | None = None
    GEMINI_MODEL: str = "gemini-2.5-flash"
    GEMINI_EMBEDDING_MODEL: str = "gemini-embedding-001"
    PROVIDER_TIMEOUT_SECONDS: float = 30.0
    PROVIDER_MAX_RETRIES: int = 3
    # USD per million tokens (input, output); configurable because list prices change.
    PRICE_INPUT_PER_MTOK: float = 0.30
    PRICE_OUTPUT_PER_MTOK: float = 2.50
    EMBED_DIM: int = 384
    EMBED_BATCH_SIZE: int = 32
    # torch threads for the local embedder. 1, because on a busy 2-core box the default (2)
    # oversubscribed: 498 ms p50 per query vs 13 ms with one thread (docs/performance.md).
    EMBED_TORCH_THREADS: int = 1

    # Retrieval
    TOP_K: int = 8
    # pgvector 0.8 iterative index scans: a filtered HNSW top-k keeps scanning until k rows pass.
    HNSW_EF_SEARCH: int = 100
    HNSW_MAX_SCAN_TUPLES: int = 40000
    MAX_QUESTION_CHARS: int = 1000
    # Abstain when the best dense cosine similarity is below this. Calibrated on the golden set
    # (evals/README.md): answerable items score >= 0.610, out-of-scope 0.030-0.126; 0.35 is the
    # midpoint of that gap rounded down to 0.05.
    ABSTAIN_MIN_SIMILARITY: float = 0.35

    # Versions
    RECENT_CHANGE_DAYS: int = 365
    TODAY: date | None = None  # injectable clock for demos and tests; None means the real date

    # Ingest caps
    MAX_SOURCE_BYTES: int = 10 * 1024 * 1024
    MAX_PDF_PAGES: int = 200

    TRACE_RETENTION_DAYS: int = 365

    @model_validator(mode="after")
    def _refuse_default_secret_outside_local(self) -> "Settings":
        if self.ENVIRONMENT not in ("local", "test") and self.SECRET_KEY == LOCAL_SECRET_KEY:
            raise ValueError(
                "POLICYDESK_SECRET_KEY must be set to a real secret when POLICYDESK_ENVIRONMENT "
                f"is {self.ENVIRONMENT!r}"
            )
        return self

    @property
    def session_cookie_secure(self) -> bool:
        if self.SESSION_COOKIE_SECURE is not None:
            return self.SESSION_COOKIE_SECURE
        return self.ENVIRONMENT not in ("local", "test")

    def today(self) -> date:
        return self.TODAY or date.today()


@lru_cache
def get_settings() -> Settings:
    return Settings()
