"""`policydesk sync DIR [--every MINUTES]`: re-ingest what changed in the document folder."""

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
) -> None:
    """Sync the index with DIRECTORY: changed and new sources re-ingested, one transaction each.

    Exit 1 when a source failed its checks (it is listed; the others are synced)."""
    from policydesk.ingest import IngestError
    from policydesk.ingest.sync import sync_directory, sync_every
    from policydesk.providers import embedding_for

    if every is not None and every <= 0:
        _fail("--every must be a positive number of minutes")
    settings = get_settings()
    embed_model = embedding_for(settings)
    with _database() as db:
        def run():
            return sync_directory(db, directory, embed_model, settings)

        if every is None:
            try:
                result = run()
            except IngestError as exc:
                _fail(f"sync refused, nothing was written: {exc}")
            _print(result)
            raise typer.Exit(0 if result.ok else 1)
        sync_every(run, every, sleep=time.sleep, max_runs=max_runs, on_report=_print)
