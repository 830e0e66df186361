"""summary.md and report.html (inline SVG charts, no scripts, no CDN)."""

from __future__ import annotations

import html

from policydesk.accounts.access import ROLES
from policydesk.evals.golden import BUCKETS
from policydesk.evals.records import EvalRun, ItemRecord, bucket_score

COLORS = {"full": "#2f6f4f", "baseline": "#b5651d", "oracle": "#555555"}
LABELS = {"full": "full system", "baseline": "naive baseline", "oracle": "oracle draft"}


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _status(run: EvalRun) -> str:
    parts = ["CLEAN" if run.clean else f"NOT CLEAN ({len(run.degraded_items)} degraded item(s): "
             + ", ".join(run.degraded_items) + ")"]
    parts.append("0 leaks" if run.leak_total == 0 else f"LEAKS: {run.leak_total} — run FAILED")
    if run.leak_control is not None:
        parts.append(f"leak check proven (positive control flagged {run.leak_control.total})" if run.leak_check_proven
                     else "LEAK CHECK UNPROVEN: the positive control was not flagged — run FAILED")
    return "; ".join(parts)


METRIC_ROWS = [
    ("Recall@k", "recall_at_k", num), ("MRR", "mrr", num), ("nDCG@k", "ndcg_at_k", num),
    ("Right version in context", "right_version_in_context", pct),
    ("Correct and cited", "correct_and_cited", pct), ("Key fact only", "key_fact_only", pct),
    ("Key fact in the marked sentence / answer", "marked_key_fact", pct),
    ("Answerable declined", "answerable_declined", pct),
    ("Shown, gold chunk in context (oracle)", "shown_with_gold_in_context", pct),
    ("Refusal precision", "refusal_precision", pct), ("Refusal recall", "refusal_recall", pct),
    ("Over-refusal rate", "over_refusal_rate", pct),
]


def render_summary_md(run: EvalRun) -> str:
    s = run.summary
    o = s["overall"]
    lines = [
        f"# PolicyDesk eval {run.run_id}",
        "",
        f"- Status: **{_status(run)}**",
        f"- Golden: split **{run.split or 'n/a (files given)'}**, "
        + ", ".join(f"`{f}`" for f in (run.golden_files or [run.golden_path]))
        + f" ({len(run.items)} items), reference date {run.reference_date}, k={run.k}",
        "- Abstain threshold: " + ("none applied (not calibrated for this embedding model)" if run.abstain_threshold is None
                                   else f"{run.abstain_threshold} (stored for this embedding model; calibrated on dev)"),
        f"- Model: `{run.model}`{' (no model: the policy text in force, its likely sentence marked)' if run.extractive else ''}; embeddings: {run.embedding}",
        f"- Elapsed: {run.elapsed_s} s",
    ]
    lines += [f"- {note}" for note in run.skipped]
    lines += ["", "## Overall (answerable items for retrieval and correctness; all items for refusal)", "",
              "| metric | full system | naive baseline | oracle draft |", "|---|---|---|---|"]
    for label, key, fmt in METRIC_ROWS:
        lines.append(f"| {label} | {fmt(o['full'][key])} | {fmt(o['baseline'][key])} | {fmt(o['oracle'][key])} |")
    if any(o[sys]["grounded"] is not None for sys in o):
        lines.append(f"| Grounded (model-graded) | {pct(o['full']['grounded'])} | {pct(o['baseline']['grounded'])} |")
    lines += ["", "## Per bucket", "",
              "| bucket | system | Recall@k | MRR | nDCG@k | right version | correct+cited | key fact only | refusal recall | over-refusal |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for b in BUCKETS:
        for sysname in ("full", "baseline"):
            x = s["buckets"].get(b, {}).get(sysname)
            if not x:
                continue
            lines.append(f"| {b} | {sysname} | {num(x['recall_at_k'])} | {num(x['mrr'])} | {num(x['ndcg_at_k'])} | "
                         f"{pct(x['right_version_in_context'])} | {pct(x['correct_and_cited'])} | "
                         f"{pct(x['key_fact_only'])} | {pct(x['refusal_recall'])} | {pct(x['over_refusal_rate'])} |")
    lines += ["", "## Leak matrix (full pipeline, every question as every role)", "",
              "| role | questions | in retrieval | in prompts | in answers/citations |", "|---|---|---|---|---|"]
    for role in ROLES:
        c = s["leaks"].get(role)
        if c:
            lines.append(f"| {role} | {c['questions']} | {c['retrieval']} | {c['prompt']} | {c['answer']} |")
    if run.leak_control is not None:
        c = run.leak_control.cells["rep"]
        lines += ["", "Positive control: the same checker over a deliberately unscoped retriever (owner login, no "
                  f"predicate, no RLS) as rep, {c.questions} questions: {c.retrieval} in retrieval, {c.prompt} in "
                  "prompts. It must be above zero, or the zeros above prove nothing."]
    if s.get("tags"):
        lines += ["", "## Per tag (an item counts under each of its tags; `original` = the first golden set's questions)", "",
                  "| tag | items | full: correct+cited | baseline: correct+cited | full: key fact only | "
                  "baseline: key fact only | full: declined when it should | baseline: declined when it should |",
                  "|---|---|---|---|---|---|---|---|"]
        for tag, by_sys in s["tags"].items():
            f, b = by_sys.get("full"), by_sys.get("baseline")
            if f and b:
                lines.append(f"| {tag} | {f['n']} | {pct(f['correct_and_cited'])} | {pct(b['correct_and_cited'])} | "
                             f"{pct(f['key_fact_only'])} | {pct(b['key_fact_only'])} | {pct(f['refusal_recall'])} | "
                             f"{pct(b['refusal_recall'])} |")
    if run.calibration:
        lines += ["", "## Abstention threshold", ""] + calibration_lines(run.calibration.to_json())
    lines += ["", "## Items that were not correct and cited", ""]
    for sysname in ("full", "baseline"):
        lines.append(f"### {LABELS[sysname]}")
        lines.append("")
        fails = [r for r in run.records if r.system == sysname and not r.correct_and_cited]
        if not fails:
            lines.append("- none")
        for r in fails:
            lines.append(f"- `{r.item_id}` ({r.bucket}): {why(r)}")
        lines.append("")
    return "\n".join(lines) + "\n"


def calibration_lines(cj: dict) -> list[str]:
    def ids(x):
        return "n/a" if x is None else (", ".join(x) or "none")

    lines = [f"- Embedding model: {cj.get('embedding_model')}; split: {cj.get('split') or 'n/a'}",
             f"- Stored threshold for this model: {cj['current'] if cj['current'] is not None else 'NOT CALIBRATED'}",
             f"- Answerable items: best dense similarity min {num(cj['answerable_min'])}, max {num(cj['answerable_max'])}",
             "- Out-of-scope and not-in-corpus items: "
             + (", ".join(f"{k} {v:.3f}" for k, v in sorted(cj["out_of_scope"].items())) or "none"),
             f"- Stored threshold abstains on answerable: {ids(cj['current_abstains_answerable'])}; "
             f"on out-of-scope: {ids(cj['current_abstains_out_of_scope'])}"]
    if cj.get("split") == "test":
        lines.append("- Recommended: not computed on the test split (calibrate with `--split dev`)")
    else:
        overlap = cj.get("ranges_overlap")
        share = cj.get("max_answerable_abstain_share")
        rule = ("no answerable items" if cj["recommended"] is None
                else f"ranges overlap: the highest value abstaining on at most {share:.0%} of answerable items"
                if overlap else "gap between the ranges: its midpoint, rounded down to 0.05")
        lines += [f"- Recommended from these items: {cj['recommended']} ({rule}; policydesk/evals/calibrate.py)",
                  f"- Recommended threshold abstains on answerable: {ids(cj['recommended_abstains_answerable'])}; "
                  f"on out-of-scope: {ids(cj['recommended_abstains_out_of_scope'])}"]
    return lines


def why(r: ItemRecord) -> str:
    if r.expect_refusal:
        return f"answered instead of declining: {r.answer[:160]!r}"
    if r.refused:
        return f"refused ({r.refusal_reason})"
    if r.abstained or r.error:
        return f"no answer ({(r.abstain_reason or r.error or '')[:160]})"
    bits = []
    if not r.key_fact:
        bits.append(f"key fact missing from answer {r.answer[:160]!r}")
    if not r.versions_match:
        bits.append(f"cited versions {sorted(set(map(tuple, r.cited_versions)))}")
    if not r.citations_in_context:
        bits.append("a citation was not in context")
    return "; ".join(bits)


# ---------------------------------------------------------------------------------- SVG


def svg_grouped_bars(groups: list[str], series: dict[str, list[float | None]], title: str,
                     width: int = 720, height: int = 260) -> str:
    left, bottom, top = 40, 50, 30
    plot_w, plot_h = width - left - 10, height - bottom - top
    n_series = len(series)
    group_w = plot_w / max(len(groups), 1)
    bar_w = group_w * 0.8 / max(n_series, 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{html.escape(title)}">',
           f'<text x="{left}" y="18" font-size="14" font-weight="bold">{html.escape(title)}</text>']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{int(tick * 100)}%</text>')
    for gi, g in enumerate(groups):
        gx = left + gi * group_w + group_w * 0.1
        for si, (name, values) in enumerate(series.items()):
            v = values[gi]
            x = gx + si * bar_w
            if v is None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - 4}" font-size="9" text-anchor="middle">n/a</text>')
                continue
            h = plot_h * v
            out.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                       f'fill="{COLORS.get(name, "#666")}"><title>{html.escape(LABELS.get(name, name))} {g}: {pct(v)}</title></rect>')
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - h - 3:.1f}" font-size="9" '
                       f'text-anchor="middle">{round(100 * v)}</text>')
        out.append(f'<text x="{gx + group_w * 0.4:.1f}" y="{top + plot_h + 16}" font-size="10" '
                   f'text-anchor="middle">{html.escape(g)}</text>')
    lx = left
    for name in series:
        out.append(f'<rect x="{lx}" y="{height - 16}" width="10" height="10" fill="{COLORS.get(name, "#666")}"/>')
        out.append(f'<text x="{lx + 14}" y="{height - 7}" font-size="11">{html.escape(LABELS.get(name, name))}</text>')
        lx += 140
    out.append("</svg>")
    return "\n".join(out)


def render_html(run: EvalRun) -> str:
    s = run.summary
    o = s["overall"]
    per_bucket = svg_grouped_bars(
        list(BUCKETS), {sysname: [bucket_score(s, b, sysname) for b in BUCKETS] for sysname in ("full", "baseline")},
        "Per bucket: correct-and-cited (must_refuse: refusal recall)")
    key_fact = svg_grouped_bars(
        [b for b in BUCKETS if b != "must_refuse"],
        {sysname: [s["buckets"].get(b, {}).get(sysname, {}).get("key_fact_only") for b in BUCKETS if b != "must_refuse"]
         for sysname in ("full", "baseline")},
        "Per bucket: key fact only (no version or citation check)")
    ret_gen_keys = [("Recall@k", "recall_at_k"), ("MRR", "mrr"), ("nDCG@k", "ndcg_at_k"),
                    ("right version", "right_version_in_context"), ("key fact", "key_fact_only"),
                    ("correct+cited", "correct_and_cited")]
    ret_gen = svg_grouped_bars([k for k, _ in ret_gen_keys],
                               {sysname: [o[sysname][key] for _, key in ret_gen_keys] for sysname in ("full", "baseline")},
                               "Retrieval (left) vs generation (right), answerable items")
    leak_rows = "".join(
        f"<tr><td>{role}</td><td>{c['questions']}</td>"
        + "".join(f'<td class="{"bad" if c[st] else "ok"}">{c[st]}</td>' for st in ("retrieval", "prompt", "answer"))
        + "</tr>" for role, c in s["leaks"].items())
    metric_rows = "".join(f"<tr><td>{label}</td><td>{fmt(o['full'][key])}</td><td>{fmt(o['baseline'][key])}</td></tr>"
                          for label, key, fmt in METRIC_ROWS)
    item_rows = []
    for r in run.records:
        cls = "ok" if r.correct_and_cited else "bad"
        item_rows.append(
            f'<tr><td>{html.escape(r.item_id)}</td><td>{r.system}</td><td>{r.bucket}</td><td>{r.role}</td>'
            f'<td class="{cls}">{"yes" if r.correct_and_cited else "no"}</td>'
            f'<td>{html.escape(why(r) if not r.correct_and_cited else "")}</td></tr>')
    skipped = "".join(f"<li>{html.escape(n)}</li>" for n in run.skipped)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>PolicyDesk eval {html.escape(run.run_id)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; max-width: 1000px; color: #222; }}
table {{ border-collapse: collapse; margin: 1rem 0; }} td, th {{ border: 1px solid #ccc; padding: 4px 8px; font-size: 13px; }}
.ok {{ background: #e6f4ea; }} .bad {{ background: #fce8e6; }} .status {{ font-weight: bold; }}
</style></head><body>
<h1>PolicyDesk eval {html.escape(run.run_id)}</h1>
<p class="status">{html.escape(_status(run))}</p>
<p>Golden: {html.escape(str(run.golden_path))} ({len(run.items)} items), reference date {run.reference_date}, k={run.k}.
Model: {html.escape(run.model)}{" (no model: the policy text in force, its likely sentence marked)" if run.extractive else ""}.</p>
<ul>{skipped}</ul>
<h2>Overall</h2>
<table><tr><th>metric</th><th>full system</th><th>naive baseline</th></tr>{metric_rows}</table>
<h2>Charts</h2>
{per_bucket}
{key_fact}
{ret_gen}
<h2>Leak matrix</h2>
<p>Every golden question run as every role through the full pipeline; chunks above the role's clearance counted.</p>
<table><tr><th>role</th><th>questions</th><th>in retrieval</th><th>in prompts</th><th>in answers/citations</th></tr>{leak_rows}</table>
<h2>Items</h2>
<table><tr><th>item</th><th>system</th><th>bucket</th><th>role</th><th>correct</th><th>why not</th></tr>{"".join(item_rows)}</table>
</body></html>
"""
