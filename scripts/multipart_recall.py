"""Recall on multi-part questions: split before retrieval vs one embedding for the whole question.

Run: .venv/bin/python scripts/multipart_recall.py   (embedded Postgres, demo corpus, offline model)
Each question names, by hand, the sections that answer each of its parts.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from policydesk.access import clearance_for
from policydesk.config import Settings
from policydesk.ingest import ingest_directory
from policydesk.providers import offline_embedding
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from policydesk.runtime import open_migrated
from policydesk.storage.engine import create_database

CORPUS = Path(__file__).resolve().parent.parent / "corpus"

# (question, {doc_id: section_id}) — each part's answering section, written from the corpus text.
CASES = [
    ("what is the timely filing limit and how do I file an appeal?",
     {"POL-TF": "filing-limit", "POL-APL": "how-to-file-an-appeal"}),
    ("How long does a standard prior authorization decision take, and how fast must an emergency admission be reported?",
     {"POL-PA": "decision-timeframes", "POL-ER": "notification-deadline"}),
    ("When is a secondary claim due after the primary EOB? Also how long do corrected claims have?",
     {"POL-COB": "secondary-claim-filing", "POL-CORR": "resubmission-deadline"}),
    ("How do I replace a member ID card and how do I get an interpreter on the line?",
     {"POL-IDC": "requesting-a-replacement-card", "POL-INT": "phone-interpretation"}),
    ("What is the appeal deadline after a denial notice; what is the formulary exception decision time?",
     {"POL-APL": "appeal-filing-deadline", "POL-RX": "decision-timeframes"}),
    ("Is audio-only telehealth covered and when does durable medical equipment need authorization?",
     {"POL-TH": "audio-only-visits", "POL-DME": "authorization-and-rentals"}),
]


def recall(retriever: HybridRetriever, question: str, expected: dict[str, str]) -> float:
    ids = {n.node.node_id.split(":")[0] + ":" + n.node.node_id.split(":")[2] for n in retriever.search(question).nodes}
    return sum(f"{d}:{s}" in ids for d, s in expected.items()) / len(expected)


def main() -> None:
    settings = Settings(DATA_DIR=Path(tempfile.mkdtemp()), _env_file=None)
    name = f"multipart_{uuid.uuid4().hex[:8]}"
    create_database(settings, name)
    db = open_migrated(settings, name)
    embed = offline_embedding()
    ingest_directory(db, CORPUS, embed, settings)
    c = clearance_for("compliance")
    store = chunk_vector_store(db)
    for k in (4, 8):
        split = HybridRetriever(store, embed, clearance=c, top_k=k, split_parts=True)
        whole = HybridRetriever(store, embed, clearance=c, top_k=k, split_parts=False)
        rs = [recall(split, q, e) for q, e in CASES]
        rw = [recall(whole, q, e) for q, e in CASES]
        print(f"k={k}: section recall split={sum(rs)/len(rs):.3f} single-embedding={sum(rw)/len(rw):.3f} "
              f"({len(CASES)} two-part questions)")
        for (q, _), a, b in zip(CASES, rs, rw):
            print(f"   split {a:.1f}  single {b:.1f}  {q}")
    db.dispose()


if __name__ == "__main__":
    main()
