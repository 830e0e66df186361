"""`policydesk eval`: run the golden set, write <results>/<run-id>/, fail on any leak.

The run folder goes under `--results DIR` (alias `--out`), by default the data directory's
results/evals/ (`Settings.results_dir`), so a run never writes into the checkout; its path is printed.

Register in policydesk/cli.py with:  app.command("eval")(eval_command)

Exit codes: 0 clean and leak-free; 1 any leak (the run fails); 3 no leaks but NOT CLEAN
(some item ran on degraded retrieval; re-run with --retry-fallbacks); 2 bad input.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

REPO = Path(__file__).resolve().parents[2]
DEMO_CORPUS = REPO / "corpus"


def _fresh_database(settings, corpus: Path, embed_model):
    """A new database holding only `corpus`, so the system is measured on that data alone."""
    from policydesk.ingest import ingest_directory
    from policydesk.ops.runtime import open_migrated
    from policydesk.storage.engine import create_database

    name = "policydesk_eval_" + datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S") + "_" + secrets.token_hex(2)
    create_database(settings, name)
    db = open_migrated(settings, name)
    ingest_directory(db, corpus, embed_model, settings, progress=True)
    return db, name


def eval_command(
    corpus: Annotated[Optional[Path], typer.Option(
        help="Corpus directory (with manifest.yaml). Given: ingested into a fresh database. "
             "Omitted: the demo corpus in the configured database (re-ingest is a no-op when unchanged).")] = None,
    split: Annotated[str, typer.Option(
        help="Golden split: test (frozen; the headline figures) or dev (tuning allowed). "
             "Reads evals/golden_<split>.yaml and any other file in policydesk.evals.golden.SPLIT_SOURCES; "
             "with --corpus DIR, from evals/<DIR's name>/ when that folder holds golden files.")] = "test",
    golden: Annotated[Optional[list[Path]], typer.Option(
        help="Golden YAML file(s) to read as they are, instead of the split's files (repeatable).")] = None,
    k: Annotated[int, typer.Option(help="Retrieval depth for both systems and for Recall/nDCG@k.")] = 8,
    retry_fallbacks: Annotated[bool, typer.Option(
        "--retry-fallbacks", help="Re-run items whose retrieval ran degraded (embedding failure).")] = False,
    repeats: Annotated[int, typer.Option(help="Repeat each item N times (live provider only).")] = 1,
    slice_: Annotated[Optional[int], typer.Option("--slice", help="Only the first N items, spread over buckets.")] = None,
    results: Annotated[Optional[Path], typer.Option(
        "--results", "--out", help="Where run folders are written (default: DATA_DIR/results/evals).")] = None,
    leak_matrix: Annotated[bool, typer.Option(help="Run every question as every role and count leaks.")] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Evaluate the full system against the naive baseline on the golden set."""
    from policydesk.config import get_settings
    from policydesk.evals.golden import SPLITS, GoldenError, evals_dir_for, load_golden, load_split
    from policydesk.evals.harness import run_eval, write_results
    from policydesk.ingest import IngestError, ingest_directory
    from policydesk.providers import embedding_for, llm_for
    from policydesk.ops.runtime import open_migrated

    settings = get_settings()
    if split not in SPLITS:
        typer.secho(f"error: --split must be one of {', '.join(SPLITS)}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2)
    try:
        gold = (load_golden(list(golden)) if golden else load_split(split, evals_dir_for(corpus))).slice(slice_)
    except GoldenError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2)
    embed_model, llm = embedding_for(settings), llm_for(settings)
    try:
        if corpus is not None:
            db, name = _fresh_database(settings, corpus, embed_model)
            typer.echo(f"ingested {corpus} into fresh database {name}")
        else:
            db = open_migrated(settings)
            ingest_directory(db, DEMO_CORPUS, embed_model, settings)
    except IngestError as exc:
        typer.secho(f"error: ingest refused: {exc}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2)
    try:
        run = run_eval(db, settings, gold, embed_model=embed_model, llm=llm, k=k, retry_fallbacks=retry_fallbacks,
                       progress=progress, leak_matrix=leak_matrix, repeats=repeats,
                       corpus=str(corpus or DEMO_CORPUS))
    except GoldenError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        raise typer.Exit(2)
    finally:
        db.dispose()
    out = write_results(run, results or settings.results_dir / "evals")
    typer.echo((out / "summary.md").read_text(encoding="utf-8"))
    typer.echo(f"results: {out}")
    if run.leak_total:
        typer.secho(f"FAILED: {run.leak_total} leak(s) above clearance", err=True, fg=typer.colors.RED)
        raise typer.Exit(1)
    if not run.leak_check_proven:
        typer.secho("FAILED: the leak check's positive control (an unscoped retriever) was not flagged, so the "
                    "leak matrix cannot be trusted", err=True, fg=typer.colors.RED)
        raise typer.Exit(1)
    if not run.clean:
        typer.secho("NOT CLEAN: degraded items " + ", ".join(run.degraded_items), err=True, fg=typer.colors.YELLOW)
        raise typer.Exit(3)


if __name__ == "__main__":  # python -m policydesk.evals.cli, until it is registered in policydesk/cli.py
    typer.run(eval_command)
