"""Filler vectors kept on disk, so a 10^5-chunk realistic filler is embedded once per machine.

One directory per embedding model (named by a hash of `ingest.embedcache.model_key`, the key
the ingest cache uses), holding `vectors.f32` (float32 rows, appended) and `texts.sha256` (the
SHA-256 of the text of each row, one per line, written after its row). A text found there is
not embedded again; new texts are embedded in blocks and appended (one writer at a time, under
a lock file), so an interrupted run keeps what it finished. Only the bench reads this; ingest has its own cache in the database.
"""

from __future__ import annotations

import fcntl
import hashlib
import time
from pathlib import Path

import numpy as np

from policydesk.ingest.embedcache import model_key

BLOCK = 512  # texts embedded between two appends


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class FillerVectorFile:
    def __init__(self, directory: Path, embed_model, dim: int) -> None:
        key = model_key(embed_model)
        self.directory = Path(directory) / hashlib.sha256(key.encode()).hexdigest()[:16]
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "model.txt").write_text(key + "\n")
        self._model = embed_model
        self._dim = dim
        self._vectors = self.directory / "vectors.f32"
        self._hashes = self.directory / "texts.sha256"

    def _load(self) -> tuple[dict[str, int], np.ndarray]:
        hashes = self._hashes.read_text().split() if self._hashes.exists() else []
        rows = (self._vectors.stat().st_size // (4 * self._dim)) if self._vectors.exists() else 0
        n = min(len(hashes), rows)  # a row whose hash line is not written yet is not read
        vectors = (np.fromfile(self._vectors, dtype=np.float32, count=n * self._dim).reshape(n, self._dim)
                   if n else np.zeros((0, self._dim), np.float32))
        return {h: i for i, h in enumerate(hashes[:n])}, vectors

    def _append(self, index: dict[str, int], stored: np.ndarray, todo: list[str], first: dict[str, str],
                progress) -> tuple[dict[str, int], np.ndarray, int]:
        """Embed what is still missing and append it, holding the directory's lock: one writer at a
        time, and a torn tail (killed between a row and its hash line) is cut off first."""
        with (self.directory / "lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            index, stored = self._load()
            if self._vectors.exists():
                with self._vectors.open("r+b") as f:
                    f.truncate(len(stored) * 4 * self._dim)
            self._hashes.write_text("".join(h + "\n" for h in sorted(index, key=index.get)))
            todo = [h for h in todo if h not in index]
            new: list[np.ndarray] = []
            for start in range(0, len(todo), BLOCK):
                part = todo[start:start + BLOCK]
                block = np.asarray(self._model.get_text_embedding_batch([first[h] for h in part]),
                                   dtype=np.float32)
                with self._vectors.open("ab") as f:
                    block.tofile(f)
                with self._hashes.open("a") as f:
                    f.write("".join(h + "\n" for h in part))
                base = len(stored) + sum(len(b) for b in new)
                index.update((h, base + i) for i, h in enumerate(part))
                new.append(block)
                if progress:
                    progress(start + len(part), len(todo))
        return index, (np.concatenate([stored, *new]) if new else stored), len(todo)

    def vectors(self, texts: list[str], *, progress=None) -> tuple[np.ndarray, dict[str, float]]:
        """One vector per text, in order; and how many were embedded now, found, and the seconds."""
        index, stored = self._load()
        hashes = [_sha(t) for t in texts]
        todo = [h for h in dict.fromkeys(hashes) if h not in index]
        t0 = time.perf_counter()
        embedded = 0
        if todo:
            index, stored, embedded = self._append(index, stored, todo, dict(zip(hashes, texts)), progress)
        return stored[[index[h] for h in hashes]], {
            "embedded_now": embedded, "from_file": len(set(hashes)) - embedded,
            "embed_s": round(time.perf_counter() - t0, 1)}
