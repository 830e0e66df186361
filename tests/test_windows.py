"""The one window formatter and the one date-basis table (policydesk.versions)."""

from __future__ import annotations

from datetime import date

import pytest

from policydesk.versions import Window, basis_label, basis_title

CLOSED = Window.stored("2024-01-01", "2026-01-01")  # stored end is exclusive
OPEN = Window.stored(date(2026, 1, 1), "9999-12-31")


@pytest.mark.parametrize(("style", "closed", "open_ended"), [
    ("words", "in force 2024-01-01 to 2025-12-31", "in force from 2026-01-01"),
    ("arrow", "in force 2024-01-01 \u2192 2025-12-31", "in force 2026-01-01 \u2192 open"),
    ("range", "2024-01-01 to 2025-12-31", "2026-01-01 to open"),
    ("ascii", "in force 2024-01-01 -> 2025-12-31", "in force 2026-01-01 -> open"),
])
def test_every_style_shows_the_last_day_in_force(style, closed, open_ended):
    assert CLOSED.format(style) == closed
    assert OPEN.format(style) == open_ended


def test_a_citation_round_trips_through_its_stored_last_day():
    # Citations store the inclusive last day; reading it back gives the same window.
    first, last = CLOSED.iso()
    assert Window.cited(first, last) == CLOSED
    assert Window.cited(*OPEN.iso()) == OPEN


def test_scheduled_windows_say_so_when_today_is_given():
    today = date(2026, 11, 29)
    assert Window.stored("2027-01-01", None).format(today=today) == "takes effect 2027-01-01"
    assert Window.stored("2027-01-01", "2028-01-01").format(today=today) == "in force 2027-01-01 to 2027-12-31 (scheduled)"
    assert OPEN.format(today=today) == "in force from 2026-01-01"


def test_one_basis_table_names_a_basis_in_sentences_and_on_pages():
    assert basis_label("denial_notice_date") == "denial notice date"
    assert basis_title("denial_notice_date") == "Date on the denial notice"
    assert basis_label(None) == "date" and basis_label("some_basis") == "some basis"
    assert basis_title(None) == "Date (this source names no date basis)"
