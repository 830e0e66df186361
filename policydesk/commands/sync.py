"""`policydesk sync DIR [--every MINUTES] [--retire ID ...]`: re-ingest what changed in the document
folder; retire sources the manifest no longer lists."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from policydesk.commands.common import _database, _fail
from policydesk.config import get_settings


def _print(result) -> None:
    from policydesk.ingest.sync import SyncReport

    if not isinstance(result, SyncReport):
        typer.secho(f"sync failed, nothing more was written: {result}", err=True, fg=typer.colors.RED)
        return
    typer.echo(result.summary())
    for line in result.written:
        typer.echo(f"  synced: {line}")
    for line in result.windows_closed:
        typer.echo(f"  window: {line}")
    for line in result.failed:
        typer.secho(f"  not synced: {line}", err=True, fg=typer.colors.RED)
    for line in result.warnings:
        typer.echo(f"  warning: {line}")


def sync(
    directory: Path,
    every: Annotated[Optional[float], typer.Option("--every", help="Keep running: sync every MINUTES.")] = None,
    max_runs: Annotated[Optional[int], typer.Option("--max-runs", help="With --every: stop after N runs.")] = None,
    retire: Annotated[Optional[list[str]], typer.Option(
        "--retire", metavar="ID",
        help="Retire this source (repeatable) before syncing: its text stops being retrievable; its version "
             "history and the answers that cited it stay. Remove its manifest entries first. Audit-logged.")] = None,
    by: Annotated[Optional[str], typer.Option("--by", help="Who retires or syncs, for the audit log (default: OS user).")] = None,
) -> None:
    """Sync the index with DIRECTORY: changed and new sources re-ingested, one transaction each.

    Exit 1 when a source failed its checks (it is listed; the others are synced). A bad manifest
    entry fails alone; a manifest that can't be read stops the sync (exit 2)."""
    import getpass

    from policydesk.ingest import IngestError
    from policydesk.ingest.sync import retire_sources, sync_directory, sync_every
    from policydesk.providers import embedding_for

    if every is not None and every <= 0:
        _fail("--every must be a positive number of minutes")
    if retire and every is not None:
        _fail("--retire runs once: leave out --every")
    settings = get_settings()
    with _database() as db:
        if retire:
            try:
                retired = retire_sources(db, directory, retire, actor=by or getpass.getuser())
            except IngestError as exc:
                _fail(f"nothing was retired: {exc}")
            for line in retired:
                typer.echo(f"  retired: {line}")
        embed_model = embedding_for(settings)

        def run():
            return sync_directory(db, directory, embed_model, settings, actor=by or getpass.getuser())

        if every is None:
            try:
                result = run()
            except IngestError as exc:
                _fail(f"sync refused, nothing was written: {exc}")
            _print(result)
            raise typer.Exit(0 if result.ok else 1)
        sync_every(run, every, sleep=time.sleep, max_runs=max_runs, on_report=_print)
