"""Start-up checks that the security layers are really on (refuse to serve if not).

Row-level security only binds a role without SUPERUSER or BYPASSRLS, on tables where it is
enabled and forced; append-only proof holds only while the application role cannot UPDATE,
DELETE or TRUNCATE the chained tables. A migration rolled back or a `DATABASE_URL` pointed at
the wrong login silently undoes each of these, so they are read from the catalog at start-up.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from policydesk.config.constants import LOCAL_APP_DB_PASSWORD

# Tables whose rows a caller may only see inside their scope.
PROTECTED_TABLES = ("documents", "document_versions", "data_chunks", "traces", "audit_log", "feedback",
                    "product_choices")
APPEND_ONLY_TABLES = ("traces", "audit_log", "login_attempts", "feedback", "api_requests", "product_choices")
_WRITES = ("UPDATE", "DELETE", "TRUNCATE")
# Tables the application login only reads: accounts and API tokens are created, changed and
# revoked by the owner login (the CLI, and single sign-on's provisioning step), never by a request.
READ_ONLY_TABLES = ("users", "api_tokens", "source_files")
# Read under forced row-level security too, once a later migration has made them (0024's kept
# source files: the bytes of a version the caller may read, reached through the cited chunk).
PROTECTED_WHEN_PRESENT = ("source_files",)
_READ_ONLY_WRITES = ("INSERT", *_WRITES)
# Tables the application login must not touch at all: the full-text side table holds every
# chunk's lexemes with no row-level security; it is read only through a definer function that
# applies the caller's clearance (migration 0010), and so does its per-clearance lexeme count table
# (0016). The embedding cache (0011) is ingest's alone.
NO_ACCESS_TABLES = ("chunk_search", "chunk_search_df", "embedding_cache")
# Sign-in sessions (migration 0018): the application login opens, touches and ends them, and may
# update only the columns that move; a session's owner, id and start are fixed, and only the
# owner login deletes (purges) rows.
SESSIONS_TABLE = "sessions"
SESSION_FIXED_COLUMNS = ("secret_sha256", "user_id", "started_at")
_ANY_ACCESS = ("SELECT", *_READ_ONLY_WRITES)
MIN_SECRET_KEY_BYTES = 32


class InsecureStartError(RuntimeError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def database_problems(app: Engine) -> list[str]:
    """What is wrong with the application login and the schema, one line (with its fix) each."""
    problems = []
    with app.connect() as conn:
        me = conn.execute(text(
            "SELECT rolname, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")).one()
        if me.rolsuper:
            problems.append(f"the application login {me.rolname!r} is a superuser, so row-level security does not "
                            f"bind it: connect as a plain role (ALTER ROLE {me.rolname} NOSUPERUSER)")
        if me.rolbypassrls:
            problems.append(f"the application login {me.rolname!r} has BYPASSRLS, so row-level security does not "
                            f"bind it: ALTER ROLE {me.rolname} NOBYPASSRLS")
        rows = conn.execute(text(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
            "WHERE relname = ANY(:t) AND relnamespace = 'public'::regnamespace"), {"t": list(PROTECTED_TABLES)}).all()
        found = {r.relname: r for r in rows}
        found |= {r.relname: r for r in conn.execute(text(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
            "WHERE relname = ANY(:t) AND relnamespace = 'public'::regnamespace"), {"t": list(PROTECTED_WHEN_PRESENT)})}
        for table in (*PROTECTED_TABLES, *(t for t in PROTECTED_WHEN_PRESENT if t in found)):
            r = found.get(table)
            if r is None:
                problems.append(f"table {table} is missing: run the migrations (policydesk starts them itself; "
                                "check the owner login in DATABASE_URL)")
            elif not r.relrowsecurity:
                problems.append(f"row-level security is off on {table}: ALTER TABLE {table} ENABLE ROW LEVEL SECURITY "
                                "(or re-run the migrations to head)")
            elif not r.relforcerowsecurity:
                problems.append(f"row-level security is not forced on {table}: ALTER TABLE {table} FORCE ROW LEVEL "
                                "SECURITY (or re-run the migrations to head)")
        # Checked against the catalog itself: a table outside PROTECTED_TABLES (login_attempts)
        # used to be skipped here, so its grants were never looked at.
        present = set(conn.execute(text(
            "SELECT relname FROM pg_class WHERE relname = ANY(:t) AND relnamespace = 'public'::regnamespace"),
            {"t": [*APPEND_ONLY_TABLES, *READ_ONLY_TABLES, *NO_ACCESS_TABLES, SESSIONS_TABLE]}).scalars())
        checks = [(t, _WRITES, "a record it must only append to could be changed") for t in APPEND_ONLY_TABLES]
        checks += [(t, _READ_ONLY_WRITES, "a table only the owner login may change could be changed")
                   for t in READ_ONLY_TABLES]
        checks += [(t, _ANY_ACCESS, "rows could be read or written around row-level security")
                   for t in NO_ACCESS_TABLES]
        checks.append((SESSIONS_TABLE, _WRITES, "a sign-in session could be moved to another user or erased"))
        for table, privileges, what in checks:
            if table not in present:
                continue
            for priv in privileges:
                if conn.execute(text("SELECT has_table_privilege(current_user, :t, :p)"),
                                {"t": table, "p": priv}).scalar():
                    problems.append(f"the application login may {priv} {table}, so {what}: "
                                    f"REVOKE {priv} ON {table} FROM {me.rolname}")
        if SESSIONS_TABLE in present:
            for column in SESSION_FIXED_COLUMNS:
                if conn.execute(text("SELECT has_column_privilege(current_user, :t, :c, 'UPDATE')"),
                                {"t": SESSIONS_TABLE, "c": column}).scalar():
                    problems.append(f"the application login may UPDATE {SESSIONS_TABLE}.{column}, so a sign-in "
                                    f"session could be moved to another user: REVOKE UPDATE ({column}) ON "
                                    f"{SESSIONS_TABLE} FROM {me.rolname}")
    return problems


def settings_problems(settings) -> list[str]:
    """Production-only: secrets left at their shipped defaults."""
    if settings.ENVIRONMENT != "production":
        return []
    problems = []
    if settings.APP_DB_PASSWORD.get_secret_value() == LOCAL_APP_DB_PASSWORD:
        problems.append("POLICYDESK_APP_DB_PASSWORD is the shipped default: set a real password for the "
                        "application login (and ALTER ROLE ... PASSWORD to match)")
    if len(settings.SECRET_KEY.get_secret_value().encode()) < MIN_SECRET_KEY_BYTES:
        problems.append(f"POLICYDESK_SECRET_KEY is shorter than {MIN_SECRET_KEY_BYTES} bytes: set a random key, "
                        "e.g. python -c 'import secrets; print(secrets.token_urlsafe(48))'")
    if not settings.METRICS_TOKEN:
        problems.append("POLICYDESK_METRICS_TOKEN is not set, so /metrics would be open to anyone who reaches the "
                        "port: set a random token and give it to the Prometheus scrape job as its bearer token")
    return problems


def check_secure_start(db, settings) -> None:
    """Raise InsecureStartError listing every problem; return quietly when all layers are on."""
    problems = settings_problems(settings) + database_problems(db.app)
    if problems:
        raise InsecureStartError(problems)
