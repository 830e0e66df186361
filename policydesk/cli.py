"""The `policydesk` command line."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from sqlalchemy.orm import Session

from policydesk.accounts.access import ROLES, UnknownRoleError
from policydesk.commands.common import _database, _fail, _parse_date
from policydesk.commands.report import report_app
from policydesk.commands.sync import sync as sync_command
from policydesk.commands.tokens import tokens_app
from policydesk.commands.traces import bookkeeping_app, traces_app
from policydesk.config import get_settings

app = typer.Typer(help="PolicyDesk: the rule that applied, and proof of what was said.", no_args_is_help=True)
users_app = typer.Typer(help="Manage staff accounts.", no_args_is_help=True)
app.add_typer(users_app, name="users")
app.add_typer(traces_app, name="traces")
app.add_typer(bookkeeping_app, name="bookkeeping")
app.add_typer(report_app, name="report")
app.add_typer(tokens_app, name="tokens")
app.command("sync")(sync_command)

@app.callback()
def _start() -> None:
    """Every command logs JSON lines on stderr (policydesk/ops/logs.py): warnings and errors, `serve` more."""
    from policydesk.ops.logs import configure_logging

    configure_logging("WARNING")


DEMO_CORPUS = Path(__file__).resolve().parent.parent / "corpus"
DEMO_USERS = {"rep": "rep", "supervisor": "supervisor", "compliance": "compliance", "admin": "admin"}


@app.command()
def ingest(
    directory: Path,
    progress: bool = typer.Option(True, help="Show a progress bar."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be written per file; write nothing."),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Leave out refused files and ingest the rest."),
) -> None:
    """Ingest the sources listed in DIRECTORY/manifest.yaml (one transaction)."""
    # Imported in the commands that need it: `policydesk ask --server` must start without
    # loading the retrieval stack.
    from policydesk.ingest import IngestError, ingest_directory, plan_directory

    if dry_run:
        from policydesk.ingest.dryrun import describe, summary

        try:
            _, planned = plan_directory(directory, get_settings())
        except IngestError as exc:
            _fail(f"manifest refused: {exc}")
        for p in planned:
            typer.echo("\n".join(describe(p)))
        typer.echo(summary(planned, skip_bad))
        raise typer.Exit(1 if any(p.refused for p in planned) and not skip_bad else 0)

    from policydesk.providers import embedding_for

    settings = get_settings()
    with _database() as db:
        try:
            report = ingest_directory(db, directory, embedding_for(settings), settings, progress=progress,
                                      skip_bad=skip_bad)
        except IngestError as exc:
            _fail(f"ingest refused, nothing was written: {exc}")
    typer.echo(report.summary())
    for line in report.windows_closed:
        typer.echo(f"  window: {line}")
    for line in report.skipped:
        typer.echo(f"  skipped: {line}")
    for line in report.warnings:
        typer.echo(f"  warning: {line}")


@app.command()
def inspect(
    file: Path,
    source_type: Annotated[Optional[str], typer.Option("--type", help="policy | wiki | call_note (default: from the suffix)")] = None,
) -> None:
    """Print the sections and chunks FILE would give (heading path, tokens, first words) and its warnings."""
    from policydesk.ingest.dryrun import describe, inspect_file

    if not file.is_file():
        _fail(f"{file}: file not found")
    planned = inspect_file(file, get_settings(), source_type)
    typer.echo("\n".join(describe(planned)))
    raise typer.Exit(1 if planned.refused else 0)


@app.command("check-staleness")
def check_staleness_cmd(directory: Path = typer.Argument(DEMO_CORPUS)) -> None:
    """List indexed sources whose file changed (or vanished) since ingest. Exit 1 if any."""
    from policydesk.ingest import check_staleness

    with _database() as db:
        stale = check_staleness(db, directory)
    if not stale:
        typer.echo("all indexed sources match their files")
        return
    for s in stale:
        typer.echo(f"{s.doc_id} v{s.version} {s.file}: {s.reason} (indexed {s.indexed_sha256[:12]}, now {(s.current_sha256 or '-')[:12]})")
    raise typer.Exit(1)


@users_app.command("add")
def users_add(name: str, role: Annotated[str, typer.Option("--role", help=f"One of {', '.join(ROLES)}")],
              password: Annotated[Optional[str], typer.Option("--password")] = None) -> None:
    """Add a user; a random password is printed when none is given."""
    from policydesk.accounts.users import UserError, add_user

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                user, pw = add_user(session, name=name, role=role, password=password)
                line = f"added {user.name} ({user.role})"
        except (UserError, UnknownRoleError) as exc:
            _fail(str(exc))
    typer.echo(line + ("" if password else f"; password: {pw}"))


@users_app.command("set-role")
def users_set_role(name: str, role: str) -> None:
    """Change a user's role; their sessions end, and they sign in again under the new role."""
    from policydesk.accounts.users import UserError, set_role

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                set_role(session, name=name, role=role)
        except (UserError, UnknownRoleError) as exc:
            _fail(str(exc))
    typer.echo(f"{name} is now {role}; existing sessions are signed out")


@users_app.command("set-password")
def users_set_password(name: str, password: Annotated[Optional[str], typer.Option("--password")] = None) -> None:
    """Set a user's password (a random one is printed once when none is given); their existing
    sessions are signed out."""
    from policydesk.accounts.users import UserError, set_password

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                _, pw = set_password(session, name=name, password=password)
        except UserError as exc:
            _fail(str(exc))
    typer.echo(f"password changed for {name}; existing sessions are signed out"
               + ("" if password else f"; password: {pw}"))


@users_app.command("disable")
def users_disable(name: str) -> None:
    """Disable a user: they cannot sign in or ask, and their next request signs them out."""
    from policydesk.accounts.users import UserError, disable_user

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                disable_user(session, name=name)
        except UserError as exc:
            _fail(str(exc))
    typer.echo(f"{name} is disabled")


@users_app.command("purge-sessions")
def users_purge_sessions(older_than: Annotated[int, typer.Option(
        "--older-than", help="Days since the session ended or was last used.")] = 30) -> None:
    """Delete old sign-in sessions (owner login); open sessions within their limits are kept."""
    from policydesk.accounts.sessions import purge_sessions

    if older_than <= 0:
        _fail("--older-than must be a positive number of days")
    with _database() as db:
        with Session(db.owner) as session, session.begin():
            n = purge_sessions(session, older_than_days=older_than)
    typer.echo(f"deleted {n} sessions older than {older_than} days")


@users_app.command("enable")
def users_enable(name: str) -> None:
    """Enable a disabled user again (they sign in with their existing password)."""
    from policydesk.accounts.users import UserError, enable_user

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                enable_user(session, name=name)
        except UserError as exc:
            _fail(str(exc))
    typer.echo(f"{name} is enabled")


@users_app.command("list")
def users_list() -> None:
    from policydesk.accounts.users import list_users

    with _database() as db:
        with Session(db.owner) as session:
            for u in list_users(session):
                disabled = f"\tdisabled since {u.disabled_at:%Y-%m-%d %H:%M %Z}" if u.disabled_at else ""
                typer.echo(f"{u.name}\t{u.role}{disabled}")


@app.command()
def ask(question: str,
        as_user: Annotated[Optional[str], typer.Option("--as", help="The staff user asking (local database).")] = None,
        date_of_service: Annotated[Optional[str], typer.Option("--date-of-service")] = None,
        denial_date: Annotated[Optional[str], typer.Option("--denial-date")] = None,
        line_of_business: Annotated[Optional[str], typer.Option(
            "--line-of-business", help="The member's product (a name the corpus's sources use); "
                                       "only its sources and those for every product are read.")] = None,
        as_json: Annotated[bool, typer.Option("--json")] = False,
        server: Annotated[Optional[str], typer.Option(
            "--server", help="Ask a running PolicyDesk at this URL through its API instead of the local database.")] = None,
        token: Annotated[Optional[str], typer.Option(
            "--token", envvar="POLICYDESK_API_TOKEN", help="API token for --server (or POLICYDESK_API_TOKEN).")] = None,
        ) -> None:
    """Ask a policy question as USER and print the answer (one JSON object with --json)."""
    dates = {"date_of_service": _parse_date(date_of_service, "date of service"),
             "denial_notice_date": _parse_date(denial_date, "denial notice date")}
    if server:  # the server applies its own cap, and traces what it refuses
        return _ask_server(server, token, question, dates, as_json, line_of_business)
    max_chars = get_settings().MAX_QUESTION_CHARS
    if len(question) > max_chars and len(question.strip()) > max_chars:  # before the database or a model is opened
        _fail(f"the question is longer than {max_chars} characters (POLICYDESK_MAX_QUESTION_CHARS); "
              "ask about one policy rule at a time, in a shorter question")
    if not as_user:
        _fail("--as USER is required (or --server URL --token T to ask a running server)")
    from policydesk.contract.answer import AskRequest
    from policydesk.client import render_answer
    from policydesk.pipeline import build_pipeline

    settings = get_settings()
    with _database(serving=True) as db:
        pipeline = build_pipeline(db, settings)
        result = pipeline.ask(AskRequest(user_name=as_user, question=question, dates=dates,
                                         line_of_business=line_of_business))
    if result.error_code == "unknown_line_of_business":  # bad input, like a bad date: exit 2
        _fail(result.error)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2, default=str))
    else:
        typer.echo(render_answer(result.to_json()))
    if result.error:
        raise typer.Exit(1)


def _ask_server(server: str, token: Optional[str], question: str, dates: dict, as_json: bool,
                line_of_business: Optional[str] = None) -> None:
    """The same JSON as a local `ask --json`, from a running server (no model or database loaded here)."""
    from policydesk.client import ApiClientError, ask_remote, render_answer

    if not token:
        _fail("--server needs --token T (or POLICYDESK_API_TOKEN); create one with `policydesk tokens create USER`")
    try:
        answer = ask_remote(server, token, question, {b: d.isoformat() for b, d in dates.items() if d},
                            line_of_business=line_of_business)
    except ApiClientError as exc:
        _fail(str(exc), code=exc.exit_code)
    typer.echo(json.dumps(answer, indent=2, default=str) if as_json else render_answer(answer))
    if answer.get("error"):
        raise typer.Exit(1)


@app.command()
def serve(host: str = "127.0.0.1", port: int = 8000,
          forwarded_allow_ips: Annotated[Optional[str], typer.Option(
              "--forwarded-allow-ips", envvar="POLICYDESK_FORWARDED_ALLOW_IPS",
              help="The reverse proxy's addresses (comma-separated) whose X-Forwarded-For and "
                   "X-Forwarded-Proto are trusted. Unset (the default), no forwarded header is "
                   "trusted from anyone: each connection's own address is the client's. Behind a "
                   "proxy, name it, or every user shares the proxy's sign-in throttle counter.")] = None,
          workers: Annotated[int, typer.Option(
              "--workers", min=1, envvar="POLICYDESK_SERVE_WORKERS",
              help="Worker processes (each loads its own embedding model: ~0.45 GB resident per worker, "
                   "measured in docs/deploy.md). Sessions, sign-in "
                   "throttling, rate limits and the trace chain live in Postgres, so every worker "
                   "agrees; more than one uses more than one core.")] = 1) -> None:
    """Serve the web app."""
    from policydesk.commands.serving import prepare_metrics_dir
    from policydesk.ops.logs import configure_logging, log_config

    settings = get_settings()
    prepare_metrics_dir(settings.DATA_DIR)  # before the app (and prometheus_client) is imported
    configure_logging(settings.LOG_LEVEL)
    import uvicorn

    with _database(serving=True):  # refuse before binding the port; the app opens its own engines
        pass
    # uvicorn re-raises the signal that stopped it once it has shut down. SIGTERM's default action
    # would then end the process on the spot, skipping atexit: the embedded Postgres handle would
    # never be given back and the server would outlive `serve`. Leaving through SystemExit runs it.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    options = dict(host=host, port=port, log_config=log_config(settings.LOG_LEVEL), **proxy_options(forwarded_allow_ips),
                   timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS)
    if workers > 1:  # each worker process builds the app from the same settings (environment)
        uvicorn.run("policydesk.web.app:app_from_settings", factory=True, workers=workers, **options)
    else:
        from policydesk.web.app import create_app

        uvicorn.run(create_app(settings), **options)


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(0)  # a requested stop, after uvicorn shut down cleanly


# uvicorn's supervisor kills a worker that does not answer its ping, and a restarted worker that has
# not finished start-up, within this many seconds (its default, 5, is shorter than a worker's start:
# model, classifier, warm-up; on a loaded host one missed ping became a restart loop, docs/deploy.md).
WORKER_HEALTHCHECK_SECONDS = 180


def proxy_options(forwarded_allow_ips: Optional[str]) -> dict:
    """uvicorn's proxy options. With no proxy named, proxy headers are off entirely: uvicorn
    would otherwise trust 127.0.0.1 (or its FORWARDED_ALLOW_IPS environment variable), so any
    local client could choose the address the sign-in throttle counts."""
    named = [ip.strip() for ip in (forwarded_allow_ips or "").split(",") if ip.strip()]
    if not named:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(named)}


@app.command()
def demo(host: str = "127.0.0.1", port: int = 8000, serve_app: bool = typer.Option(True, "--serve/--no-serve")) -> None:
    """Embedded Postgres, demo corpus, one demo user per role, and the web app."""
    import os

    from policydesk.ingest import ingest_directory
    from policydesk.providers import embedding_for
    from policydesk.accounts.users import add_user, get_user

    # The demo's sources folder is the one it ingests, unless one is configured: the admin page's
    # "Sync now" and the owners report's review dates read it (serve's workers inherit the variable).
    if "POLICYDESK_SYNC_DIR" not in os.environ and get_settings().SYNC_DIR is None:
        os.environ["POLICYDESK_SYNC_DIR"] = str(DEMO_CORPUS)
        get_settings.cache_clear()
    settings = get_settings()
    with _database(serving=serve_app) as db:
        report = ingest_directory(db, DEMO_CORPUS, embedding_for(settings), settings, progress=True)
        typer.echo(f"demo corpus: {report.summary()}")
        with Session(db.owner) as session, session.begin():
            for name, role in DEMO_USERS.items():
                if get_user(session, name=name) is None:
                    _, pw = add_user(session, name=name, role=role)
                    typer.echo(f"demo user {name} ({role}) password: {pw}   <- shown once")
                else:
                    typer.echo(f"demo user {name} ({role}) exists; password unchanged")
    if serve_app:
        typer.echo(f"PolicyDesk on http://{host}:{port}  (Ctrl-C to stop; the embedded Postgres stops with it)")
        serve(host=host, port=port, forwarded_allow_ips=None)


def _register_optional_commands() -> None:
    from policydesk.bench.cli import bench_command
    from policydesk.evals.cli import eval_command

    app.command("eval", help="Run the golden set against the full system and the naive baseline.")(eval_command)
    app.command("bench", help="Stage-level latency benchmarks, optionally at 10^4/10^5 synthetic chunks.")(bench_command)
    from policydesk.commands.stack import stack as stack_command

    app.command("stack")(stack_command)
    from policydesk.commands.backup import backup, migrate, restore

    app.command("backup")(backup)
    app.command("restore")(restore)
    app.command("migrate")(migrate)


_register_optional_commands()


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
