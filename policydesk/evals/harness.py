"""Run the golden set through the full system and the naive baseline, and the leak matrix.

    run = run_eval(db, settings, load_golden(), embed_model=embed, llm=llm, k=8)
    write_results(run, settings.results_dir / "evals")

Full system = `AskPipeline.ask(AskRequest(kind="eval"))`, so every eval request is traced with
kind "eval" by the pipeline itself. Baseline = `policydesk.evals.baseline.NaiveBaseline`.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from policydesk.accounts.access import ROLES
from policydesk.contract.answer import AskRequest
from policydesk.evals.baseline import NaiveBaseline
from policydesk.evals.calibrate import calibrate
from policydesk.evals.golden import Golden, GoldenItem, check_against_db, load_golden
from policydesk.evals.grader import grade_groundedness, live_provider
from policydesk.evals.leaks import ChunkCatalog, LeakMatrix, UnscopedDenseRetriever, leak_control
from policydesk.evals.oracle import OracleSynthesizer
from policydesk.evals.records import EvalRun, ItemRecord, summarize
from policydesk.evals.report import render_html, render_summary_md
from policydesk.proof.instrumentation import watch_model_calls

OFFLINE_MODEL_NAME = "policy-text-offline"  # no model: the offline reader shows the passages in force

EVAL_USER_PREFIX = "eval-"
MAX_FALLBACK_RETRIES = 2


def eval_user(role: str) -> str:
    return f"{EVAL_USER_PREFIX}{role}"


def ensure_eval_users(db) -> dict[str, str]:
    """One eval user per role, created through the owner engine if missing."""
    from policydesk.accounts.users import add_user, get_user, set_role

    with Session(db.owner) as session, session.begin():
        for role in ROLES:
            name = eval_user(role)
            user = get_user(session, name=name)
            if user is None:
                add_user(session, name=name, role=role)
            elif user.role != role:
                set_role(session, name=name, role=role)
    return {r: eval_user(r) for r in ROLES}


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def _progress(iterable, total: int, desc: str, enabled: bool):
    if not enabled:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="q", leave=False)


def _full_record(pipeline, item: GoldenItem, role: str, user: str) -> tuple[ItemRecord, Any]:
    result = pipeline.ask(AskRequest(user_name=user, question=item.question, dates=item.date_inputs(), kind="eval",
                                     line_of_business=item.line_of_business))
    rec = ItemRecord(item_id=item.id, system="full", bucket=item.bucket, role=role, question=item.question,
                     dates=item.dates, expect_refusal=item.expect_refusal)
    rec.context_ids = list(result.context_ids)
    rec.cited_ids = [c.chunk_id for c in result.citations]
    rec.cited_versions = [(c.doc_id, int(c.version)) for c in result.citations]
    rec.answer = result.answer or ""
    rec.shown = " ".join([rec.answer, *(p.text for p in result.passages)])
    rec.refused, rec.refusal_reason = result.refused, result.refusal_code
    rec.abstained, rec.abstain_reason = result.abstained, result.abstain_reason
    rec.degraded, rec.error = result.degraded, result.error
    rec.trace_id = str(result.trace_id) if result.trace_id else None
    rec.versions_applied = list(result.versions_applied)
    return rec, result


def _baseline_record(baseline: NaiveBaseline, item: GoldenItem) -> tuple[ItemRecord, Any]:
    out = baseline.ask(item.question, item.role, item.dates)
    rec = ItemRecord(item_id=item.id, system="baseline", bucket=item.bucket, role=item.role, question=item.question,
                     dates=item.dates, expect_refusal=item.expect_refusal)
    rec.context_ids = out.context_ids
    rec.cited_ids = out.cited_ids
    rec.cited_versions = out.cited_versions
    rec.answer = out.answer if out.answered else ""
    rec.abstained = not out.answered and not out.degraded
    rec.abstain_reason = out.abstain_reason
    rec.degraded, rec.error = out.degraded, out.error
    return rec, out


def _with_retries(fn, retry: bool):
    rec, raw = fn()
    tries = 0
    while retry and rec.degraded and tries < MAX_FALLBACK_RETRIES:
        tries += 1
        time.sleep(min(2 ** tries, 10))  # quota-style failures clear with time
        rec, raw = fn()
    rec.retries = tries
    return rec, raw


def run_eval(db, settings, golden: Golden | Path | str, *, embed_model, llm, k: int = 8,
             retry_fallbacks: bool = False, progress: bool = True, leak_matrix: bool = True,
             repeats: int = 1, do_calibrate: bool = True, corpus: str | None = None) -> EvalRun:
    from policydesk.pipeline import AskPipeline
    t0 = time.perf_counter()
    if not isinstance(golden, Golden):
        golden = load_golden(golden)
    check_against_db(golden, db)
    users = ensure_eval_users(db)
    live = live_provider(settings) and llm is not None
    from policydesk.evals.calibrate import stored_threshold

    threshold = stored_threshold(settings)
    run = EvalRun(
        run_id=new_run_id(), started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        golden_path=str(golden.path) if golden.path else None,
        split=golden.meta.get("split"), golden_files=list(golden.meta.get("files", [])), abstain_threshold=threshold,
        reference_date=golden.reference_date.isoformat() if golden.reference_date else None,
        k=k, model=llm.metadata.model_name if llm is not None else OFFLINE_MODEL_NAME,
        embedding=type(embed_model).__name__, extractive=llm is None, items=list(golden.items), repeats=repeats if live else 1, corpus=corpus,
    )
    if not live:
        run.skipped.append("groundedness grader: skipped (offline; needs a live provider, POLICYDESK_GEMINI_API_KEY)")
        if repeats > 1:
            run.skipped.append(f"--repeats {repeats}: skipped (offline answers are deterministic; needs a live provider)")
    if threshold is None:
        run.skipped.append(f"similarity abstention: none applied, no threshold is calibrated for "
                           f"{settings.embedding_model_name} (see the calibration section for the value dev recommends)")
    eval_settings = settings.model_copy(update={"TOP_K": k, "ABSTAIN_MIN_SIMILARITY": threshold or 0.0})
    pipeline = AskPipeline(db, eval_settings, embed_model, llm, today=golden.reference_date)
    baseline = NaiveBaseline(db, embed_model, llm, k=k)
    catalog = ChunkCatalog(db)
    # The oracle row: the same pipeline and checks, drafting the gold answer (evals/oracle.py).
    oracle = OracleSynthesizer(embed_model)
    oracle_pipeline = AskPipeline(db, eval_settings, embed_model, oracle.llm, today=golden.reference_date)
    oracle_pipeline.synthesizer = oracle

    for rep in range(run.repeats):
        for item in _progress(golden.items, len(golden.items), f"golden (repeat {rep + 1})", progress):
            full, _ = _with_retries(lambda: _full_record(pipeline, item, item.role, users[item.role]), retry_fallbacks)
            base, base_raw = _with_retries(lambda: _baseline_record(baseline, item), retry_fallbacks)
            for rec in (full, base):
                rec.score(item, k)
                if rep:
                    rec.item_id = f"{item.id}#r{rep + 1}"
            # Baseline runs under the same predicate: count its leaks too, outside the matrix.
            base.leaks = {s: v for s, v in LeakMatrix().record(
                catalog, item.role, item.id, base.context_ids, base_raw.prompts, base.answer, base.cited_ids).items()}
            if live:
                for rec, texts in ((full, None), (base, base_raw.cited_texts)):
                    if rec.answered:
                        rec.grounded = grade_groundedness(llm, item.question, rec.answer,
                                                          texts if texts is not None else _cited_texts(catalog, rec))
            oracle.item = item
            gold, _ = _full_record(oracle_pipeline, item, item.role, users[item.role])
            gold.system, gold.gold_in_context = "oracle", oracle.gold_in_context
            gold.score(item, k)
            run.records += [full, base, gold]

    if leak_matrix:
        pairs = [(item, role) for item in golden.items for role in ROLES]
        for item, role in _progress(pairs, len(pairs), "leak matrix", progress):
            with watch_model_calls() as prompts:  # every model call, an extension's own included
                _, result = _full_record(pipeline, item, role, users[role])
            found = run.leaks.record(catalog, role, item.id, result.context_ids, prompts,
                                     result.answer or "", [c.chunk_id for c in result.citations])
            if item.role == role:
                run.record("full", item.id).leaks = found
        run.leak_control = leak_control(catalog, UnscopedDenseRetriever(db, embed_model, k),
                                        [(item.id, item.question) for item in golden.items])
    if do_calibrate:
        run.calibration = calibrate(db, settings, golden, embed_model, k=k, split=run.split)
    run.summary = summarize(run)
    run.elapsed_s = round(time.perf_counter() - t0, 1)
    return run


def _cited_texts(catalog: ChunkCatalog, rec: ItemRecord) -> list[str]:
    return [catalog.chunks[c].text for c in rec.cited_ids if c in catalog.chunks]


def run_to_json(run: EvalRun) -> dict:
    return {
        "run_id": run.run_id, "started_at": run.started_at, "golden": run.golden_path, "corpus": run.corpus,
        "split": run.split, "golden_files": run.golden_files, "abstain_threshold": run.abstain_threshold,
        "embedding_model": run.calibration.embedding_model if run.calibration else None,
        "reference_date": run.reference_date, "k": run.k, "model": run.model, "embedding": run.embedding,
        "extractive": run.extractive, "repeats": run.repeats, "clean": run.clean, "leak_total": run.leak_total,
        "skipped": run.skipped, "elapsed_s": run.elapsed_s, "summary": run.summary,
        "calibration": run.calibration.to_json() if run.calibration else None,
    }


def write_results(run: EvalRun, results_dir: Path) -> Path:
    out = Path(results_dir) / run.run_id
    out.mkdir(parents=True, exist_ok=True)
    with (out / "items.jsonl").open("w", encoding="utf-8") as fh:
        for rec in run.records:
            fh.write(json.dumps(rec.to_json(), sort_keys=True) + "\n")
    (out / "run.json").write_text(json.dumps(run_to_json(run), indent=2, sort_keys=True), encoding="utf-8")
    (out / "summary.md").write_text(render_summary_md(run), encoding="utf-8")
    (out / "report.html").write_text(render_html(run), encoding="utf-8")
    return out
