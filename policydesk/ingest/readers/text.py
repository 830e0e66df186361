"""Plain text: paragraphs are separated by blank lines; a one-line paragraph is a heading when it
is title-like and ALL CAPS or numbered. A first line standing alone is the document's title."""

from __future__ import annotations

from policydesk.ingest.headings import clean_title, is_all_caps, is_title_like, numbering, rank_levels
from policydesk.ingest.layout import Block, Layout


def read_text(text: str) -> Layout:
    paras: list[tuple[list[str], int]] = []
    buf: list[str] = []
    start = 1
    for i, line in enumerate(text.splitlines() + [""], start=1):
        if line.strip():
            if not buf:
                start = i
            buf.append(line.strip())
        elif buf:
            paras.append((buf, start))
            buf = []
    title = None
    if len(paras) > 1 and len(paras[0][0]) == 1 and is_title_like(paras[0][0][0]):
        title = clean_title(paras[0][0][0])
        paras = paras[1:]
    keys: list[tuple | None] = []
    for lines, _ in paras:
        line = lines[0]
        depth, _ = numbering(line)
        caps = is_all_caps(line)
        single = len(lines) == 1 and is_title_like(line)
        keys.append((not caps, depth) if single and (caps or depth) else None)
    ranks = iter(rank_levels([k for k in keys if k]))
    blocks = [
        Block(clean_title(lines[0]), f"line {n}", next(ranks)) if key else Block(" ".join(lines), f"line {n}")
        for (lines, n), key in zip(paras, keys)
    ]
    return Layout(blocks, title=title)
