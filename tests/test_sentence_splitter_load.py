"""`load_sentence_splitter` pays the splitter's one-time cost (nltk's import) up front: benchmarks
call it before timing an ingest, so it must reach the sentence tokenizer, not just build a splitter."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_splitter_imports_the_sentence_tokenizer_in_a_fresh_process():
    code = ("import sys; from policydesk.ingest.chunking import load_sentence_splitter; "
            "before = 'nltk' in sys.modules; load_sentence_splitter(); print(before, 'nltk' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "True"]
