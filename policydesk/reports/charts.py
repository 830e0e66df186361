"""Server-side SVG charts for the gaps report: no JavaScript, no CDN, escaped labels."""

from __future__ import annotations

from datetime import date

from markupsafe import Markup, escape

from policydesk.reports.gaps import Counts

SERIES = (("answered", "#2f7d4f"), ("not answered", "#c27c0e"), ("refused", "#a33a3a"))


def _parts(c: Counts) -> tuple[int, int, int]:
    return c.answered, c.not_answered, sum(c.refused.values())


def daily_chart(daily: dict[date, Counts], *, width: int = 640, height: int = 160) -> Markup:
    """Stacked bars per day: answered, not answered, refused."""
    if not daily:
        return Markup("")
    days = list(daily)
    peak = max(sum(_parts(c)) for c in daily.values()) or 1
    bar_w = max(2.0, (width - 40) / len(days) - 2)
    out = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height + 30}" width="100%" '
           f'aria-label="Questions per day, {escape(days[0])} to {escape(days[-1])}">']
    for i, d in enumerate(days):
        x, y = 30 + i * (bar_w + 2), float(height)
        for value, (name, colour) in zip(_parts(daily[d]), SERIES):
            h = value / peak * (height - 10)
            if h:
                y -= h
                out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" fill="{colour}">'
                           f'<title>{escape(d)}: {value} {name}</title></rect>')
    out.append(f'<text x="30" y="{height + 14}" font-size="11">{escape(days[0])}</text>')
    out.append(f'<text x="{width - 10}" y="{height + 14}" font-size="11" text-anchor="end">{escape(days[-1])}</text>')
    out.append(f'<text x="0" y="12" font-size="11">{peak}</text>')
    legend_x = 30
    for name, colour in SERIES:
        out.append(f'<rect x="{legend_x}" y="{height + 20}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{legend_x + 14}" y="{height + 29}" font-size="11">{name}</text>')
        legend_x += 110
    out.append("</svg>")
    return Markup("".join(out))


def owner_chart(owners: dict[str, Counts], *, width: int = 640, row: int = 22) -> Markup:
    """One bar per source owner: asked, with the part not answered and refused."""
    if not owners:
        return Markup("")
    peak = max(c.asked for c in owners.values()) or 1
    # Room for the longest owner name at 12 px (about 7 px a character), within reason: a longer
    # name is cut at the chart's edge rather than squeezing the bars away.
    label_w = min(320, max(120, 7 * max(len(o) for o in owners) + 12))
    bar_area = width - label_w - 60
    out = [f'<svg class="chart" role="img" viewBox="0 0 {width} {row * len(owners) + 4}" width="100%" '
           'aria-label="Questions per source owner">']
    for i, (owner, c) in enumerate(owners.items()):
        y, x = i * row + 2, float(label_w)
        out.append(f'<text x="{label_w - 6}" y="{y + 14}" font-size="12" text-anchor="end">{escape(owner)}</text>')
        for value, (name, colour) in zip(_parts(c), SERIES):
            w = value / peak * bar_area
            if w:
                out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 6}" fill="{colour}">'
                           f'<title>{escape(owner)}: {value} {name}</title></rect>')
                x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + 14}" font-size="12">{c.asked} asked</text>')
    out.append("</svg>")
    return Markup("".join(out))
