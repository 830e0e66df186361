"""Sections into token-bounded chunks.

A section whose embedded text fits the window is one chunk, its text exactly `Section.text`
(so chunk ids and cited-text hashes of short sections are what they were before chunking).
A longer section is cut by LlamaIndex's SentenceSplitter at sentence boundaries, whole
sentences up to `overlap` tokens repeated at the start of the next part (a paragraph is not
kept whole: the splitter only overlaps whole splits, so paragraph-sized splits would never
overlap), counting with the embedding model's own tokenizer; every part starts with the section's heading path, so each part still names its
section and dense search sees the heading with the words under it. Part 1 keeps the section's
id; later parts are `section-id:2`, `section-id:3`.
"""

from __future__ import annotations

from dataclasses import dataclass

from policydesk.ingest.outline import Section
from policydesk.ingest.tokens import SPECIAL_TOKENS, TokenBudget

MIN_ROOM = 32  # tokens left for body text when a title and heading path are very long


def embed_text(doc_title: str, chunk_text: str) -> str:
    """What the embedding model reads for a chunk: the document title, then the chunk."""
    return f"{doc_title}: {chunk_text}"


@dataclass(frozen=True)
class ChunkSpec:
    key: str  # unique within one document version; the tail of the chunk id
    section: Section
    part: int
    parts: int
    text: str
    tokens: int  # tokens embedded, special tokens included
    # (first page, last page) of the source its body text was read from; None for a format
    # without pages. Metadata only: the text, and so the chunk id and embedding, never depend on it.
    pages: tuple[int, int] | None = None


def _body(text: str) -> str:
    return " ".join(text.split())


def load_sentence_splitter() -> None:
    """Load the sentence splitter now: its first use imports nltk (which imports scipy.stats),
    about 0.9 s once per process. Benchmarks pay it at set-up, beside the model load, so an ingest's
    time is the ingest's own (docs/performance.md, "Ingest")."""
    from llama_index.core.node_parser import SentenceSplitter

    # Longer than the chunk size, so the sentence tokenizer (nltk's) is reached, not only built.
    SentenceSplitter(chunk_size=8, chunk_overlap=0, tokenizer=str.split).split_text(
        "One two three four five. Six seven eight nine ten. Eleven twelve thirteen.")


def _split(body: str, room: int, overlap: int, budget: TokenBudget) -> list[str]:
    from llama_index.core.node_parser import SentenceSplitter

    splitter = SentenceSplitter(
        chunk_size=room, chunk_overlap=min(overlap, room // 4), tokenizer=budget.ids,
        paragraph_separator="\n\n", separator=" ",
    )
    return [p for p in splitter.split_text(body) if p.strip()]


def _section_chunks(doc_title: str, section: Section, budget: TokenBudget) -> list[tuple[str, int]]:
    whole = section.text
    tokens = budget.count(embed_text(doc_title, whole)) + SPECIAL_TOKENS
    if tokens <= budget.max_tokens:
        return [(whole, tokens)]
    head = embed_text(doc_title, f"{section.heading}\n")
    room = max(MIN_ROOM, budget.max_tokens - SPECIAL_TOKENS - budget.count(head))
    out: list[tuple[str, int]] = []
    pending = _split(" ".join(section.paragraphs), room, budget.overlap, budget)
    while pending:
        piece = pending.pop(0)
        text = f"{section.heading}\n{_body(piece)}"
        tokens = budget.count(embed_text(doc_title, text)) + SPECIAL_TOKENS
        words = piece.split()
        if tokens > budget.max_tokens and len(words) > 1:
            # The splitter sums per-split counts; a join can tokenize a little longer. Re-cut
            # (in halves if the splitter cannot), so every piece shrinks and this ends.
            sub = _split(piece, max(MIN_ROOM, room - (tokens - budget.max_tokens) - 8), 0, budget)
            if len(sub) <= 1:
                sub = [" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2:])]
            pending = sub + pending
            continue
        out.append((text, tokens))
    return out


def _word_pages(section: Section) -> list[int]:
    """The page of each word of the section's body text (its words as `Section.text` joins them);
    empty for a section read from a format without pages."""
    out: list[int] = []
    if not section.pages:
        return out
    for paragraph, starts in zip(section.paragraphs, section.pages):
        count = len(paragraph.split())
        page = starts[0][1] if starts else 0
        marks = dict(starts)
        for i in range(count):
            page = marks.get(i, page)
            out.append(page)
    return out


def _pages_of(body: str, words: list[str], pages: list[int], cursor: int) -> tuple[tuple[int, int] | None, int]:
    """(first page, last page) of a chunk's body text within the section's words, and where the
    next part's search starts (parts overlap, so it starts after this part's first word). A part
    not found word for word (a splitter that cut inside a word) gets the whole section's pages:
    a wider place that still holds it."""
    if not pages:
        return None, cursor
    part = body.split()
    starts = range(cursor, len(words) - len(part) + 1) if part else range(0)
    first = next((i for i in starts if words[i] == part[0] and words[i:i + len(part)] == part), None)
    if first is None:
        return (min(pages), max(pages)), cursor
    return (pages[first], pages[first + len(part) - 1]), first + 1


def chunk_sections(doc_title: str, sections: list[Section], budget: TokenBudget) -> list[ChunkSpec]:
    chunks: list[ChunkSpec] = []
    for section in sections:
        parts = _section_chunks(doc_title, section, budget)
        pages = _word_pages(section)
        words = " ".join(section.paragraphs).split()
        cursor = 0
        for n, (text, tokens) in enumerate(parts, start=1):
            key = section.section_id if n == 1 else f"{section.section_id}:{n}"
            where, cursor = _pages_of(text[len(section.heading) + 1:], words, pages, cursor)
            chunks.append(ChunkSpec(key, section, n, len(parts), text, tokens, where))
    return chunks
