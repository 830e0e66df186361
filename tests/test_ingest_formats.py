"""Readers, sections and chunks for every format and heading style (issue 14). No database: this
is what `policydesk inspect` shows, read from fixtures made by fpdf2 and python-docx."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from policydesk.config import Settings
from policydesk.ingest.dryrun import inspect_file
from policydesk.ingest.layout import Block, Layout
from policydesk.ingest.outline import NO_HEADINGS, build_sections
from policydesk.ingest.readers.markup import read_html, read_markdown
from policydesk.ingest.readers.text import read_text
from tests import ingest_fixtures as fx
from tests.conftest import CORPUS


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return fx.build(tmp_path_factory.mktemp("formats"))


@pytest.fixture(scope="module")
def offline() -> Settings:
    return Settings(_env_file=None, ENVIRONMENT="test")


def _plan(path: Path, settings: Settings, kind: str | None = None):
    planned = inspect_file(path, settings, kind)
    assert not planned.refused, planned.problem
    return planned


def _sections(planned) -> list[tuple[str, str]]:
    seen = {}
    for c in planned.chunks:
        seen.setdefault(c.section.section_id, c.section.heading)
    return list(seen.items())


def test_bold_unnumbered_pdf_headings_nest_keep_the_preamble_and_number_repeated_titles(corpus, offline):
    # The held-out corpus of issue 14 was refused whole for headings like these.
    planned = _plan(corpus / "policies/imaging.pdf", offline)
    assert planned.doc_title == "Imaging Prior Authorization"
    assert _sections(planned) == [
        ("imaging-prior-authorization", "Imaging Prior Authorization"),  # the preamble
        ("decision-timeframe", "Decision timeframe"),
        ("exceptions", "Coordination \u203a Exceptions"),
        ("exceptions-2", "Appeals \u203a Exceptions"),
        ("clinical-criteria", "Clinical criteria"),
    ]
    assert "Radiology Benefit Office" in planned.chunks[0].text
    assert planned.warnings == []


def test_running_footer_is_not_indexed(corpus, offline):
    planned = _plan(corpus / "policies/imaging.pdf", offline)
    assert not any("Page " in c.text for c in planned.chunks)


def test_numbered_pdf_headings_lose_their_numbers_in_ids(corpus, offline):
    planned = _plan(corpus / "policies/hearing.pdf", offline)
    assert _sections(planned) == [("purpose", "Purpose"), ("replacement-frequency", "Replacement frequency")]


def test_all_caps_body_font_pdf_headings(corpus, offline):
    planned = _plan(corpus / "policies/ambulance.pdf", offline)
    assert [sid for sid, _ in _sections(planned)] == ["emergency-transport", "non-emergency-transport"]


def test_pdf_without_headings_is_kept_with_a_warning(corpus, offline):
    planned = _plan(corpus / "policies/vision.pdf", offline)
    assert planned.warnings == [NO_HEADINGS]
    assert "12 months" in " ".join(c.text for c in planned.chunks)


def test_every_pdf_character_has_the_style_of_its_text_object(corpus):
    # The PDF reader asks PDFium for font size, name, flags and weight once per text object, not
    # once per character; that loses nothing only while every character of an object has the
    # object's style. Checked character by character on the demo corpus and the format fixtures.
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as c

    files = sorted((CORPUS / "policies").glob("*.pdf")) + sorted(corpus.rglob("*.pdf"))
    checked, objects = 0, set()
    name, flags = ctypes.create_string_buffer(128), ctypes.c_int()
    for path in files:
        doc = pdfium.PdfDocument(str(path))
        for n in range(len(doc)):
            page = doc[n]
            textpage = page.get_textpage()
            tp, first = textpage.raw, {}
            for i in range(c.FPDFText_CountChars(tp)):
                obj = c.FPDFText_GetTextObject(tp, i)
                if not obj:
                    continue
                c.FPDFText_GetFontInfo(tp, i, name, len(name), ctypes.byref(flags))
                style = (c.FPDFText_GetFontSize(tp, i), name.value, flags.value, c.FPDFText_GetFontWeight(tp, i))
                assert first.setdefault(bytes(obj), style) == style, f"{path.name} page {n + 1} character {i}"
                checked += 1
            objects.update((path.name, n, k) for k in first)
            textpage.close()
        doc.close()
    assert checked > 20 * len(objects) > 0  # objects are runs of text, so this saves calls


_DEJAVU = Path("/usr/share/fonts/truetype/dejavu")


@pytest.mark.skipif(not (_DEJAVU / "DejaVuSans.ttf").exists(), reason="needs the DejaVu fonts to set the text")
def test_pdf_text_outside_the_bmp_keeps_each_character_with_its_style(tmp_path, offline):
    # The reader takes a page's text in one call and styles once per text object; a character
    # outside the BMP is two UTF-16 units there, which must not shift the text against the styles
    # (the heading would lose its bold, the sentence its last character).
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.add_font("DejaVu", "", str(_DEJAVU / "DejaVuSans.ttf"))
    pdf.add_font("DejaVu", "B", str(_DEJAVU / "DejaVuSans-Bold.ttf"))
    for heading, body in (("Scope of the rule", "A \U0001F600 marks this sentence, then ordinary text follows it."),
                          ("Exceptions", "None apply to this rule.")):
        pdf.set_font("DejaVu", "B", 14)
        pdf.cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("DejaVu", "", 11)
        pdf.multi_cell(0, 6, body, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "emoji.pdf"))
    planned = _plan(tmp_path / "emoji.pdf", offline, "policy")
    assert [h for _, h in _sections(planned)] == ["Scope of the rule", "Exceptions"]
    assert planned.chunks[0].text.endswith("A \U0001F600 marks this sentence, then ordinary text follows it.")
    assert planned.chunks[1].text == "Exceptions\nNone apply to this rule."


def test_docx_heading_styles_nest_and_the_title_style_names_the_document(corpus, offline):
    planned = _plan(corpus / "policies/sleep.docx", offline)
    assert planned.doc_title == "Sleep Study Coverage"
    assert _sections(planned) == [
        ("sleep-study-coverage", "Sleep Study Coverage"),
        ("home-sleep-tests", "Coverage \u203a Home sleep tests"),
        ("repeat-testing", "Coverage \u203a Home sleep tests \u203a Repeat testing"),
        ("in-lab-studies", "Coverage \u203a In-lab studies"),
    ]
    assert "Titration study | Required" in planned.chunks[-1].text  # tables are read, in order


def test_docx_bold_paragraphs_are_headings_when_no_heading_styles_are_used(tmp_path, offline):
    from docx import Document

    doc = Document()
    for text, bold in (("Decision timeframe", True), ("Urgent requests are decided within 72 hours.", False),
                       ("Exceptions", True), ("No authorization is needed for emergency care.", False)):
        doc.add_paragraph().add_run(text).bold = bold
    doc.save(str(tmp_path / "bold.docx"))
    planned = _plan(tmp_path / "bold.docx", offline)
    assert [sid for sid, _ in _sections(planned)] == ["decision-timeframe", "exceptions"]


def test_markdown_headings_at_any_level_nest(corpus, offline):
    planned = _plan(corpus / "wiki/nurse-line.md", offline)
    assert _sections(planned) == [
        ("nurse-line-guide", "Nurse Line Guide"),
        ("weekday-coverage", "Hours \u203a Weekday coverage"),
        ("weekend-coverage", "Hours \u203a Weekend coverage"),
        ("transfers", "Transfers"),
    ]


def test_markdown_setext_headings_count_and_hashes_in_code_do_not():
    layout = read_markdown("Scope\n=====\n\nText one.\n\n```\n# not a heading\n```\n\nLimits\n------\n\nText two.\n")
    assert [(b.text, b.level) for b in layout.blocks if b.is_heading] == [("Scope", 1), ("Limits", 2)]


def test_html_h1_h3_and_text_outside_paragraph_tags_is_kept(corpus, offline):
    planned = _plan(corpus / "wiki/transport.html", offline)
    assert planned.doc_title == "Transportation Benefit FAQ"
    assert _sections(planned)[1:] == [("ride-scheduling", "Ride scheduling"),
                                      ("mileage-reimbursement", "Mileage reimbursement")]
    text = " ".join(c.text for c in planned.chunks)
    assert "no other way to reach covered appointments" in text  # a bare <div>
    assert "2 business days" in text and "color: red" not in text


def test_html_reports_source_lines():
    layout = read_html("<html><body>\n<h2>Fees</h2>\n<p>No fee applies.</p>\n</body></html>")
    assert layout.blocks == [Block("Fees", "line 2", 2), Block("No fee applies.", "line 3")]


def test_plain_text_caps_and_numbered_headings():
    layout = read_text("Dental Guide\n\nINTRO\n\nCleanings are covered.\n\n1. Limits\n\nTwo per year.\n")
    assert layout.title == "Dental Guide"
    assert [(b.text, b.level) for b in layout.blocks if b.is_heading] == [("INTRO", 1), ("Limits", 2)]


def test_repeated_titles_get_distinct_stable_ids():
    blocks = [Block("Exceptions", "1", 1), Block("First.", "2"), Block("Exceptions", "3", 1), Block("Second.", "4"),
              Block("Exceptions 2", "5", 1), Block("Third.", "6")]
    ids = [s.section_id for s in build_sections(Layout(blocks), "Doc").sections]
    assert ids == ["exceptions", "exceptions-2", "exceptions-2-2"]


def test_letterhead_before_the_first_heading_is_listed_not_indexed():
    blocks = [Block("Policy X-1 - Version 3 - Effective 2026-01-01", "1"), Block("This policy covers rides.", "2"),
              Block("Scope", "3", 1), Block("All members.", "4")]
    outline = build_sections(Layout(blocks), "Rides")
    assert outline.header_lines == ["Policy X-1 - Version 3 - Effective 2026-01-01"]
    assert [s.text for s in outline.sections] == ["Rides\nThis policy covers rides.", "Scope\nAll members."]


def test_long_section_is_cut_within_the_model_window_counted_by_the_models_tokenizer(corpus, offline, embed_model):
    planned = _plan(corpus / "policies/imaging.pdf", offline)
    parts = [c for c in planned.chunks if c.section.section_id == "clinical-criteria"]
    assert len(parts) > 5
    assert [c.key for c in parts] == ["clinical-criteria"] + [f"clinical-criteria:{n}" for n in range(2, len(parts) + 1)]
    # The tokenizer and window the embedder itself runs, on either engine (ONNX Runtime or torch).
    if hasattr(embed_model, "token_count"):
        count, window = embed_model.token_count, embed_model.max_length
    else:
        count, window = (lambda t: len(embed_model._model.tokenizer(t)["input_ids"])), embed_model._model.max_seq_length
    for c in planned.chunks:
        embedded = f"{planned.source.title}: {c.text}"
        assert count(embedded) <= window == 256
        assert c.text.startswith(c.section.heading + "\n")
    assert parts[-1].text.endswith(fx.KEY_SENTENCE)
    # No part starts mid-sentence, and each later part repeats the previous part's last sentence.
    bodies = [p.text.split("\n", 1)[1] for p in parts]
    assert all(b[:1].isupper() for b in bodies)
    assert all(later.split(". ")[0] in earlier for earlier, later in zip(bodies, bodies[1:]))


def test_gemini_window_is_a_setting(corpus, offline):
    small = _plan(corpus / "policies/imaging.pdf", offline)
    gemini = _plan(corpus / "policies/imaging.pdf", offline.model_copy(update={"GEMINI_API_KEY": SecretStr("k")}))
    assert len(gemini.chunks) < len(small.chunks)
    assert max(c.tokens for c in gemini.chunks) <= offline.GEMINI_CHUNK_MAX_TOKENS
    pinned = _plan(corpus / "policies/imaging.pdf", offline.model_copy(update={"CHUNK_MAX_TOKENS": 128}))
    assert max(c.tokens for c in pinned.chunks) <= 128


def test_reading_an_unchanged_file_again_gives_the_same_chunks(corpus, offline):
    for name in ("policies/imaging.pdf", "policies/sleep.docx", "wiki/nurse-line.md"):
        first, again = _plan(corpus / name, offline), _plan(corpus / name, offline)
        assert [(c.key, c.text) for c in first.chunks] == [(c.key, c.text) for c in again.chunks]
