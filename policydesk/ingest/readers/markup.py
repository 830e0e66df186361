"""Markdown (markdown-it-py, CommonMark) and HTML (Beautiful Soup): headings at any level.

Markdown: the parser finds the headings (ATX `#`..`######` and setext underlines, never a `#`
inside code); body text is kept as written between them, one block per paragraph, with its line
number. LlamaIndex's MarkdownNodeParser matches `^#+\\s` line by line, so it misses setext
headings and takes a `# comment` in an indented code block for a section.

HTML: h1..h6 are headings; text is collected in document order and broken into paragraphs at
block elements. LlamaIndex's HTMLNodeParser keeps only text inside a fixed tag list, so text
directly inside a <div> or <td> was lost.
"""

from __future__ import annotations

from pathlib import Path

from policydesk.ingest.layout import Block, Layout

_FRONT_MATTER = "---"


def _paragraphs(lines: list[str], first_line: int) -> list[Block]:
    out, buf, start = [], [], first_line
    for i, line in enumerate(lines + [""]):
        if line.strip():
            if not buf:
                start = first_line + i
            buf.append(line.strip())
        elif buf:
            out.append(Block(" ".join(buf), f"line {start}"))
            buf = []
    return out


def read_markdown(text: str) -> Layout:
    from markdown_it import MarkdownIt

    lines = text.splitlines()
    skip = 0
    if lines and lines[0].strip() == _FRONT_MATTER:  # YAML front matter is metadata, not text
        for i, line in enumerate(lines[1:], start=1):
            if line.strip() == _FRONT_MATTER:
                skip = i + 1
                break
    tokens = MarkdownIt("commonmark").parse("\n".join(lines[skip:]))
    heads = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            title = " ".join(tokens[i + 1].content.split())
            heads.append((tok.map[0] + skip, tok.map[1] + skip, int(tok.tag[1]), title))
    blocks: list[Block] = []
    cursor = skip
    for start, end, level, title in heads:
        blocks += _paragraphs(lines[cursor:start], cursor + 1)
        if title:
            blocks.append(Block(title, f"line {start + 1}", level))
        cursor = end
    blocks += _paragraphs(lines[cursor:], cursor + 1)
    return Layout(blocks)


_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SKIP = {"script", "style", "head", "noscript", "template", "svg", "nav"}
_BLOCK = {
    "p", "div", "li", "ul", "ol", "table", "tr", "td", "th", "dd", "dt", "dl", "pre", "blockquote",
    "section", "article", "header", "footer", "main", "aside", "figure", "figcaption", "form",
    "fieldset", "address", "hr", "br",
}


def read_html(text: str) -> Layout:
    from bs4 import BeautifulSoup, Comment, NavigableString

    soup = BeautifulSoup(text, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else None
    blocks: list[Block] = []
    buf: list[str] = []
    where = ["line 1"]

    def flush() -> None:
        joined = " ".join("".join(buf).split())
        if joined:
            blocks.append(Block(joined, where[0]))
        buf.clear()

    def walk(node) -> None:
        for child in node.children:
            if isinstance(child, Comment):
                continue
            if isinstance(child, NavigableString):
                if not buf and str(child).strip() and getattr(node, "sourceline", None):
                    where[0] = f"line {node.sourceline}"
                buf.append(str(child))
                continue
            name = child.name
            if name in _SKIP:
                continue
            if name in _HEADINGS:
                flush()
                heading = " ".join(child.get_text(" ").split())
                if heading:
                    blocks.append(Block(heading, f"line {child.sourceline}", _HEADINGS[name]))
            elif name in _BLOCK:
                flush()
                walk(child)
                flush()
            else:
                walk(child)

    walk(soup.body or soup)
    flush()
    return Layout(blocks, title=title or None)


def read_markup(path: Path, text: str) -> Layout:
    if path.suffix.lower() in (".html", ".htm"):
        return read_html(text)
    return read_markdown(text)
