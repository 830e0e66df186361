"""The `policydesk` command line."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Annotated, Optional

import typer
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from policydesk.access import ROLES, UnknownRoleError
from policydesk.config import get_settings
from policydesk.ingest import IngestError, check_staleness, ingest_directory

app = typer.Typer(help="PolicyDesk: the rule that applied, and proof of what was said.", no_args_is_help=True)
users_app = typer.Typer(help="Manage staff accounts.", no_args_is_help=True)
traces_app = typer.Typer(help="Manage stored traces.", no_args_is_help=True)
app.add_typer(users_app, name="users")
app.add_typer(traces_app, name="traces")

DEMO_CORPUS = Path(__file__).resolve().parent.parent / "corpus"
DEMO_USERS = {"rep": "rep", "supervisor": "supervisor", "compliance": "compliance"}


def _fail(message: str, code: int = 2) -> None:
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


@contextmanager
def _database(*, serving: bool = False):
    """The migrated database for one command; an outage becomes a clear error, not a traceback.

    Commands that answer or serve (`serving=True`) first check that the security layers are on
    and refuse to start, one line per problem, if they are not.
    """
    from policydesk.runtime import open_migrated
    from policydesk.storage.security import InsecureStartError, check_secure_start

    db = None
    try:
        settings = get_settings()
        db = open_migrated(settings)
        if serving:
            try:
                check_secure_start(db, settings)
            except InsecureStartError as exc:
                _fail("refusing to start, the security layers are not all on:\n  - "
                      + "\n  - ".join(exc.problems), code=4)
        yield db
    except DBAPIError as exc:
        _fail(f"the database is unavailable ({exc.orig.__class__.__name__ if exc.orig else 'error'}); "
              "nothing was changed. Check that Postgres is running and try again.", code=3)
    finally:
        if db is not None:
            db.dispose()


@app.command()
def ingest(directory: Path, progress: bool = typer.Option(True, help="Show a progress bar.")) -> None:
    """Ingest the sources listed in DIRECTORY/manifest.yaml (one transaction)."""
    from policydesk.providers import embedding_for

    settings = get_settings()
    with _database() as db:
        try:
            report = ingest_directory(db, directory, embedding_for(settings), settings, progress=progress)
        except IngestError as exc:
            _fail(f"ingest refused, nothing was written: {exc}")
    typer.echo(report.summary())
    for line in report.windows_closed:
        typer.echo(f"  window: {line}")


@app.command("check-staleness")
def check_staleness_cmd(directory: Path = typer.Argument(DEMO_CORPUS)) -> None:
    """List indexed sources whose file changed (or vanished) since ingest. Exit 1 if any."""
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
    from policydesk.users import UserError, add_user

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
    """Change a user's role; it applies on their next request."""
    from policydesk.users import UserError, set_role

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                set_role(session, name=name, role=role)
        except (UserError, UnknownRoleError) as exc:
            _fail(str(exc))
    typer.echo(f"{name} is now {role}")


@users_app.command("set-password")
def users_set_password(name: str, password: Annotated[Optional[str], typer.Option("--password")] = None) -> None:
    """Set a user's password (a random one is printed once when none is given); their existing
    sessions are signed out."""
    from policydesk.users import UserError, set_password

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
    from policydesk.users import UserError, disable_user

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                disable_user(session, name=name)
        except UserError as exc:
            _fail(str(exc))
    typer.echo(f"{name} is disabled")


@users_app.command("enable")
def users_enable(name: str) -> None:
    """Enable a disabled user again (they sign in with their existing password)."""
    from policydesk.users import UserError, enable_user

    with _database() as db:
        try:
            with Session(db.owner) as session, session.begin():
                enable_user(session, name=name)
        except UserError as exc:
            _fail(str(exc))
    typer.echo(f"{name} is enabled")


@users_app.command("list")
def users_list() -> None:
    from policydesk.users import list_users

    with _database() as db:
        with Session(db.owner) as session:
            for u in list_users(session):
                disabled = f"\tdisabled since {u.disabled_at:%Y-%m-%d %H:%M %Z}" if u.disabled_at else ""
                typer.echo(f"{u.name}\t{u.role}{disabled}")


def _parse_date(value: Optional[str], label: str) -> Optional[date]:
    from policydesk.dates import DateInputError, parse_input_date

    try:
        return parse_input_date(value, label)
    except DateInputError as exc:
        _fail(str(exc))


@app.command()
def ask(question: str,
        as_user: Annotated[str, typer.Option("--as", help="The staff user asking.")],
        date_of_service: Annotated[Optional[str], typer.Option("--date-of-service")] = None,
        denial_date: Annotated[Optional[str], typer.Option("--denial-date")] = None,
        as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Ask a policy question as USER and print the answer (one JSON object with --json)."""
    from policydesk.pipeline import AskRequest, build_pipeline

    dates = {"date_of_service": _parse_date(date_of_service, "date of service"),
             "denial_notice_date": _parse_date(denial_date, "denial notice date")}
    settings = get_settings()
    with _database(serving=True) as db:
        pipeline = build_pipeline(db, settings)
        result = pipeline.ask(AskRequest(user_name=as_user, question=question, dates=dates))
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2, default=str))
    else:
        typer.echo(result.render_text())
    if result.error:
        raise typer.Exit(1)


@traces_app.command("purge")
def traces_purge(older_than: Annotated[Optional[int], typer.Option("--older-than", help="Days.")] = None,
                 by: Annotated[Optional[str], typer.Option("--by", help="Who runs the purge (default: OS user).")] = None,
                 ) -> None:
    """Delete traces older than DAYS (default from settings) as the owner; the chain cut and an
    audit entry are recorded, so `traces verify` still holds."""
    import getpass

    from policydesk.tracing import purge_traces

    days = older_than if older_than is not None else get_settings().TRACE_RETENTION_DAYS
    if days <= 0:
        _fail("--older-than must be a positive number of days")
    with _database() as db:
        n = purge_traces(db, older_than_days=days, actor=by or getpass.getuser())
    typer.echo(f"deleted {n} traces older than {days} days")


@traces_app.command("export")
def traces_export(
        date_from: Annotated[str, typer.Option("--from", help="First day asked (YYYY-MM-DD).")],
        date_to: Annotated[str, typer.Option("--to", help="Last day asked (YYYY-MM-DD).")],
        user: Annotated[Optional[str], typer.Option("--user", help="Only this staff member's traces.")] = None,
        fmt: Annotated[str, typer.Option("--format", help="jsonl or csv.")] = "jsonl",
        out: Annotated[Optional[Path], typer.Option("--out", help="File to write (default: stdout).")] = None,
        by: Annotated[Optional[str], typer.Option("--by", help="Who exports, for the audit log (default: OS user).")] = None,
) -> None:
    """Export traces for auditors, each with its hash-chain link (verify offline: docs/security.md)."""
    import getpass

    from policydesk.exports import FORMATS, export_traces, render

    if fmt not in FORMATS:
        _fail(f"--format must be one of: {', '.join(FORMATS)}")
    start, end = _parse_date(date_from, "--from"), _parse_date(date_to, "--to")
    if end < start:
        _fail(f"--to ({end}) is before --from ({start})")
    with _database() as db:
        records = export_traces(db, reviewer=by or getpass.getuser(), start=start, end=end, user=user)
    body = "".join(render(records, fmt))
    if out is None:
        typer.echo(body, nl=False)
    else:
        out.write_text(body, encoding="utf-8")
        typer.echo(f"wrote {len(records)} traces to {out}", err=True)


@traces_app.command("verify")
def traces_verify() -> None:
    """Walk the trace and audit-log hash chains; exit 1 naming the first broken row."""
    from policydesk.storage.chain import CHAINED_TABLES, verify_chain

    with _database() as db:
        reports = [verify_chain(db.owner, table) for table in CHAINED_TABLES]
    for r in reports:
        if r.ok:
            typer.echo(f"{r.table}: {r.rows} rows verify (chain head seq {r.head_seq if r.head_seq else '-'})")
        else:
            typer.secho(f"{r.table}: BROKEN at {r.broken}; {r.rows} rows before it verify", fg=typer.colors.RED)
    if not all(r.ok for r in reports):
        raise typer.Exit(1)


@app.command()
def serve(host: str = "127.0.0.1", port: int = 8000,
          forwarded_allow_ips: Annotated[str, typer.Option(
              "--forwarded-allow-ips",
              help="Proxy addresses whose X-Forwarded-For is trusted (comma-separated). Behind a reverse "
                   "proxy, set it to the proxy's address, or every user shares the proxy's sign-in "
                   "throttle counter.")] = "127.0.0.1") -> None:
    """Serve the web app."""
    import uvicorn

    from policydesk.web.app import create_app

    with _database(serving=True):  # refuse before binding the port; the app opens its own engines
        pass
    uvicorn.run(create_app(get_settings()), host=host, port=port, proxy_headers=True,
                forwarded_allow_ips=forwarded_allow_ips)


@app.command()
def demo(host: str = "127.0.0.1", port: int = 8000, serve_app: bool = typer.Option(True, "--serve/--no-serve")) -> None:
    """Embedded Postgres, demo corpus, one demo user per role, and the web app."""
    from policydesk.providers import embedding_for
    from policydesk.users import add_user, get_user

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
        serve(host=host, port=port, forwarded_allow_ips="127.0.0.1")


def _register_optional_commands() -> None:
    from policydesk.bench.cli import bench_command
    from policydesk.evals.cli import eval_command

    app.command("eval", help="Run the golden set against the full system and the naive baseline.")(eval_command)
    app.command("bench", help="Stage-level latency benchmarks, optionally at 10^4/10^5 synthetic chunks.")(bench_command)


_register_optional_commands()


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
