"""Which local model files made a vector: cheap fingerprints of a model directory or a file.

Used for the embedding cache's model key (ingest/embedcache.py) and to name the ONNX file exported
from the local weights (providers/onnx_local.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_SAMPLE = 1 << 20  # bytes hashed from each end of a large file


def file_fingerprint(path: Path) -> str:
    """Size and the first and last MiB of a file: cheap, and changes when the file does."""
    h = hashlib.sha256()
    _hash_file(h, path)
    return h.hexdigest()[:16]


def weights_fingerprint(directory: Path) -> str:
    """Names, sizes and contents of a local model's files (large files: their first and last MiB)."""
    h = hashlib.sha256()
    for f in sorted(p for p in directory.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(directory)}:".encode())
        _hash_file(h, f)
    return h.hexdigest()[:16]


def _hash_file(h, path: Path) -> None:
    size = path.stat().st_size
    h.update(f"{size}\n".encode())
    with path.open("rb") as fh:
        h.update(fh.read(_SAMPLE))
        if size > 2 * _SAMPLE:
            fh.seek(-_SAMPLE, 2)
            h.update(fh.read())
