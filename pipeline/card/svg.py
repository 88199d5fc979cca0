"""A small SVG writer for the card's plots: panels with bars, step histograms, axes, legends and titles.

Stdlib only, plain f-strings.  A :class:`Panel` is one chart in its own coordinates (a title, a
legend row under it, a plot area inside margins); :func:`stack` and :func:`beside` put several in
one image, :func:`document` writes the file.  There is no font here to measure text with, so widths
are estimated from the characters (:func:`text_width`: about 0.6 em each, 1 em a wide CJK one) and margins
are sized from them.  Every coordinate is written with one decimal, so the same stats give the same bytes.

Every string drawn may come from the data (hosts, languages, stage names): :func:`text` writes it
through :func:`esc`, one line of characters XML 1.0 allows with ``& < > " '`` as references, and
nothing here writes a link, a script, a ``foreignObject`` or an external resource: the file is served
beside the card by the Hugging Face Hub.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata

from pipeline.card.escape import one_line

WIDTH = 900
FONT, SMALL, TITLE = 12, 11, 15  # px: axis labels and legend, tick labels, titles
INK, MUTED, GRID = "#1a202c", "#4a5568", "#e2e8f0"
LEGEND_ROW = 18
TITLE_ROW = 30
TICK = 5  # px: tick length, and the gap between a tick and its label

#: What XML 1.0 does not allow in a document: C0 controls but tab and line breaks, lone surrogates, U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# ----------------------------------------------------------------------------- text


def clean(value) -> str:
    """A data string as one line of characters XML 1.0 allows (those it does not as U+FFFD)."""
    return _NOT_XML.sub("\ufffd", one_line(value))


def esc(value) -> str:
    """Element text or an attribute value: :func:`clean`, then ``& < > " '`` as character references."""
    return html.escape(clean(value), quote=True)


#: Character widths in em, from DejaVu Sans (the widest common sans-serif; about 0.6 em a character on
#: average, within 3% of its rendering for hosts and step labels): narrow, wide Latin, capitals, CJK, the rest.
_NARROW, _WIDE = frozenset("iljtfrI.,:;|!'()[] /-"), frozenset("mwMW@%")


def _em(ch: str) -> float:
    if ch in _NARROW:
        return 0.36
    if ch in _WIDE:
        return 0.95
    if ch == "…" or unicodedata.east_asian_width(ch) in "WF":
        return 1.0
    return 0.72 if ch.isupper() else 0.62


def text_width(s: str, size: float) -> float:
    """Estimated width in px of ``s`` at ``size`` px (no font here to measure with)."""
    return size * sum(map(_em, s))


def num(v: float) -> str:
    """A coordinate with one decimal: fixed, so the bytes do not depend on float noise."""
    return f"{v:.1f}"


# ----------------------------------------------------------------------------- elements


def text(
    x: float,
    y: float,
    s,
    *,
    size: int = FONT,
    anchor: str = "start",
    fill: str = INK,
    rotate: float | None = None,
    bold: bool = False,
) -> str:
    """One line of text whose vertical middle is at ``y`` (a baseline 0.35 em lower: no dominant-baseline, which
    some renderers ignore)."""
    by = y + 0.35 * size
    turn = f' transform="rotate({num(rotate)} {num(x)} {num(by)})"' if rotate is not None else ""
    weight = ' font-weight="bold"' if bold else ""
    return (
        f'<text x="{num(x)}" y="{num(by)}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"'
        f"{weight}{turn}>{esc(s)}</text>"
    )


def rect(
    x: float, y: float, w: float, h: float, fill: str, *, opacity: float | None = None, cls: str | None = None
) -> str:
    extra = (f' fill-opacity="{opacity:.2f}"' if opacity is not None else "") + (f' class="{cls}"' if cls else "")
    return f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0))}" height="{num(max(h, 0))}" fill="{fill}"{extra}/>'


def line(
    x1: float,
    y1: float,
    x2: float,
    y2: float,
    stroke: str,
    *,
    width: float = 1,
    dash: bool = False,
    cls: str | None = None,
) -> str:
    extra = (' stroke-dasharray="6 4"' if dash else "") + (f' class="{cls}"' if cls else "")
    return (
        f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}" '
        f'stroke-width="{width:.1f}"{extra}/>'
    )


def path(
    d: str,
    *,
    stroke: str = "none",
    fill: str = "none",
    width: float = 1.6,
    opacity: float | None = None,
    cls: str | None = None,
) -> str:
    extra = (f' fill-opacity="{opacity:.2f}"' if opacity is not None else "") + (f' class="{cls}"' if cls else "")
    return f'<path d="{d}" stroke="{stroke}" fill="{fill}" stroke-width="{width:.1f}"{extra}/>'


# ----------------------------------------------------------------------------- panels


class Panel:
    """One chart: its size, its plot area (x, y, w, h) and its elements, all in the panel's own coordinates."""

    __slots__ = ("width", "height", "area", "parts")

    def __init__(self, width: float, height: float, area=(0.0, 0.0, 0.0, 0.0), parts: list[str] | None = None):
        self.width, self.height, self.area, self.parts = width, height, area, parts if parts is not None else []


#: A legend entry: label, colour, and how its swatch is drawn ("box", "faint" box, "line", "dashed" line).
Key = tuple[str, str, str]


def panel(
    title: str,
    *,
    plot_height: float,
    width: float = WIDTH,
    left: float = 70,
    right: float = 20,
    bottom: float = 50,
    legend: list[Key] = (),
) -> Panel:
    """A panel with ``title`` on top, the legend under it (wrapped to the plot's width), then the plot area."""
    rows = _legend_rows(legend, width - left - right)
    top = TITLE_ROW + LEGEND_ROW * len(rows) + (8 if rows else 0)
    p = Panel(width, top + plot_height + bottom, (left, top, width - left - right, plot_height))
    p.parts.append(text(width / 2, TITLE_ROW / 2 + 2, title, size=TITLE, anchor="middle", bold=True))
    for i, row in enumerate(rows):
        _legend_row(p, row, left, TITLE_ROW + LEGEND_ROW * i + LEGEND_ROW / 2)
    return p


def empty(message: str, *, width: float = WIDTH, height: float = 160) -> Panel:
    """A panel that only says why there is nothing to show, centred."""
    return Panel(width, height, parts=[text(width / 2, height / 2, message, size=14, anchor="middle", fill=MUTED)])


def _key_width(label: str) -> float:
    return 16 + 6 + text_width(label, FONT) + 24  # swatch, gap, label, gap to the next


def _legend_rows(keys: list[Key], width: float) -> list[list[Key]]:
    """The keys in rows that fit ``width`` (a key wider than a row gets a row of its own)."""
    rows: list[list[Key]] = []
    used = width
    for key in keys:
        w = _key_width(key[0])
        if used + w > width and (not rows or rows[-1]):
            rows.append([])
            used = 0
        rows[-1].append(key)
        used += w
    return rows


def _legend_row(p: Panel, row: list[Key], x: float, y: float) -> None:
    for label, colour, style in row:
        if style in ("line", "dashed"):
            p.parts.append(line(x, y, x + 16, y, colour, width=2, dash=style == "dashed"))
        else:
            p.parts.append(rect(x, y - 6, 16, 12, colour, opacity=0.35 if style == "faint" else None))
        p.parts.append(text(x + 22, y, label, anchor="start"))
        x += _key_width(label)


# ----------------------------------------------------------------------------- scales and axes


def nice_step(span: float, n: int = 5, *, integer: bool = True) -> float:
    """A step of 1, 2, 2.5 or 5 times a power of ten that cuts ``span`` in about ``n`` (at least 1 for counts)."""
    raw = max(span, 1e-12) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if raw <= m * mag * (1 + 1e-9))
    return max(step, 1) if integer else step


def nice_max(vmax: float, *, integer: bool = True) -> float:
    """``vmax`` rounded up to a whole step (1 for nothing to show, so no axis divides by zero)."""
    if vmax <= 0:
        return 1
    step = nice_step(vmax, integer=integer)
    return step * math.ceil(vmax / step - 1e-9)


def tick_label(v: float) -> str:
    """A tick value as printed: thousands separated, no trailing zeros (fixed: at most 3 decimals)."""
    if abs(v - round(v)) < 1e-9:
        return f"{round(v):,}"
    return f"{v:.3f}".rstrip("0")


def compact(v: float) -> str:
    """1000 as 1k, 2000000 as 2M (bin edges and log-axis ticks)."""
    for unit, div in (("M", 1_000_000), ("k", 1_000)):
        if v >= div:
            return f"{v / div:g}{unit}"
    return f"{v:g}"


def symlog(v: float) -> float:
    """matplotlib's symlog with linthresh 1 (base 10, linscale 1): linear on [0, 1], then one unit a decade."""
    return v if v <= 1 else 1 + math.log10(v)


def ticks(vmax: float, *, integer: bool = True) -> list[float]:
    """The tick values of an axis from 0 to ``vmax``, a nice step apart."""
    step = nice_step(vmax, integer=integer)
    return [i * step for i in range(int(vmax / step + 1e-9) + 1)]


def y_room(vmax: float, *, integer: bool = True) -> float:
    """The left margin a y axis up to ``vmax`` needs: its widest tick label, the gap, its turned title."""
    widest = max(text_width(tick_label(v), SMALL) for v in ticks(vmax, integer=integer))
    return max(60, widest + TICK + 2 * FONT + 8)


def y_linear(p: Panel, vmax: float, label: str, *, integer: bool = True) -> None:
    """Grid lines and tick labels of a linear y axis from 0 to ``vmax``, and its label along the left edge."""
    x0, y0, w, h = p.area
    for v in ticks(vmax, integer=integer):
        y = y0 + h * (1 - v / vmax)
        p.parts.append(line(x0, y, x0 + w, y, GRID))
        p.parts.append(text(x0 - TICK, y, tick_label(v), size=SMALL, anchor="end", fill=MUTED))
    _y_title(p, label)


def y_symlog(p: Panel, top: float, label: str) -> None:
    """Grid lines at 0, 1, 10, 100... up to ``top`` on the symlog scale, and the axis label."""
    x0, y0, w, h = p.area
    tmax = symlog(top)
    for v in [0, *(10**k for k in range(int(math.floor(math.log10(top) + 1e-9)) + 1))]:
        y = y0 + h * (1 - symlog(v) / tmax)
        p.parts.append(line(x0, y, x0 + w, y, GRID))
        p.parts.append(text(x0 - TICK, y, compact(v), size=SMALL, anchor="end", fill=MUTED))
    _y_title(p, label)


def _y_title(p: Panel, label: str) -> None:
    x0, y0, _, h = p.area
    p.parts.append(text(FONT, y0 + h / 2, label, anchor="middle", rotate=-90))


def x_linear(p: Panel, xmax: float, label: str) -> None:
    """Ticks, grid lines and labels of a linear x axis from 0
    to ``xmax`` (not a whole step: bars' labels need room)."""
    x0, y0, w, h = p.area
    for v in ticks(xmax):
        x = x0 + w * v / xmax
        p.parts.append(line(x, y0, x, y0 + h, GRID))
        p.parts.append(text(x, y0 + h + TICK + SMALL / 2, tick_label(v), size=SMALL, anchor="middle", fill=MUTED))
    if label:
        p.parts.append(text(x0 + w / 2, y0 + h + 2 * TICK + SMALL + FONT, label, anchor="middle"))


def frame(p: Panel) -> None:
    """The plot area's left and bottom axis lines."""
    x0, y0, w, h = p.area
    p.parts.append(line(x0, y0, x0, y0 + h, MUTED))
    p.parts.append(line(x0, y0 + h, x0 + w, y0 + h, MUTED))


def turned(labels: list[str], slot: float) -> bool:
    """Whether category labels must turn 45 degrees: one is wider than its slot."""
    return any(text_width(s, SMALL) > slot - 4 for s in labels)


def below_axis(labels: list[str], slot: float) -> float:
    """Height the category labels take under the axis, turned or not."""
    if not labels:
        return 0
    if turned(labels, slot):
        return TICK + max(text_width(s, SMALL) for s in labels) * 0.71 + SMALL
    return TICK + SMALL + 2


def left_reach(labels: list[str], slot: float) -> float:
    """The left margin turned category labels need to stay in the panel (each hangs down-left of its slot's centre)."""
    if not turned(labels, slot):
        return 0
    return max(text_width(s, SMALL) * 0.71 - slot * (i + 0.5) for i, s in enumerate(labels)) + 6


def x_categories(p: Panel, labels: list[str], centres: list[float], label: str = "") -> None:
    """Category labels under the axis at ``centres`` (turned 45
    degrees when one does not fit its slot), and the axis label."""
    x0, y0, w, h = p.area
    slot = w / max(len(labels), 1)
    rotate = turned(labels, slot)
    base = y0 + h + TICK + SMALL / 2
    for s, x in zip(labels, centres, strict=False):
        p.parts.append(line(x, y0 + h, x, y0 + h + TICK / 2, MUTED))
        if rotate:
            p.parts.append(text(x + 3, base, s, size=SMALL, anchor="end", fill=INK, rotate=-45))
        else:
            p.parts.append(text(x, base, s, size=SMALL, anchor="middle", fill=INK))
    if label:
        p.parts.append(text(x0 + w / 2, y0 + h + below_axis(labels, slot) + FONT, label, anchor="middle"))


def y_categories(p: Panel, labels: list[str], slots: int = 0) -> None:
    """One label per row, right-aligned left of the plot area, the first row on top (``slots``: rows the area
    holds, when more than the labels)."""
    x0, y0, _, h = p.area
    row = h / max(len(labels), slots, 1)
    for i, s in enumerate(labels):
        p.parts.append(text(x0 - TICK, y0 + row * (i + 0.5), s, size=SMALL, anchor="end"))


def label_room(labels: list[str], size: int = SMALL) -> float:
    """Width the longest label takes (4% over the estimate: a renderer that hints small text widens it), with the
    gap to the axis and one at the panel's edge."""
    return max((text_width(s, size) for s in labels), default=0) * 1.04 + TICK + 8


# ----------------------------------------------------------------------------- marks


#: A layer of horizontal bars: one value per row, one colour per row, an opacity (None: opaque) and a class.
Layer = tuple[list[float], list[str], float | None, str]


def reach(values: list[float], ends: list[str], width: float) -> float:
    """The x axis' end: the largest value and room after each bar for its label (``ends``) inside ``width`` px."""
    need = [
        v * width / max(width - 2 * TICK - text_width(s, SMALL), width / 4) for v, s in zip(values, ends, strict=False)
    ]
    return max([*need, *values, 1])


def hbars(p: Panel, layers: list[Layer], xmax: float, ends: list[str] = (), slots: int = 0) -> None:
    """Horizontal bars, the first row on top, layer over layer on the same rows; ``ends``: a label after each
    row's longest bar; ``slots``: rows the area holds, when more than the bars (they stay at the top)."""
    x0, y0, w, h = p.area
    row = h / max(len(layers[0][0]), slots, 1)
    for values, colours, opacity, cls in layers:
        for i, (v, c) in enumerate(zip(values, colours, strict=False)):
            p.parts.append(rect(x0, y0 + row * (i + 0.1), w * v / xmax, row * 0.8, c, opacity=opacity, cls=cls))
    for i, end in enumerate(ends):
        longest = max(layer[0][i] for layer in layers)
        p.parts.append(text(x0 + w * longest / xmax + TICK, y0 + row * (i + 0.5), end, size=SMALL))


def vbars(
    p: Panel, series: list[tuple[list[float], str, str]], vmax: float, tops: list[list[str] | None] = ()
) -> list[float]:
    """Grouped vertical bars, one group per category (``series``: values, colour, class); ``tops``: per series,
    a label above each bar (or None).  Returns the groups' centres."""
    x0, y0, w, h = p.area
    n = len(series[0][0]) if series else 0
    slot = w / max(n, 1)
    bar = 0.8 * slot / max(len(series), 1)
    for k, (values, colour, cls) in enumerate(series):
        labels = tops[k] if k < len(tops) else None
        for i, v in enumerate(values):
            x = x0 + slot * (i + 0.1) + bar * k
            top = y0 + h * (1 - v / vmax)
            p.parts.append(rect(x, top, bar, y0 + h - top, colour, cls=cls))
            if labels and labels[i]:
                p.parts.append(text(x + bar / 2, top - TICK - SMALL / 2, labels[i], size=SMALL, anchor="middle"))
    return [x0 + slot * (i + 0.5) for i in range(n)]


def steps(p: Panel, series: list[tuple[list[float], str]], ymax: float, scale=symlog) -> None:
    """A step histogram per series (bin i spans [i, i + 1)): a lightly filled area and its outline, on ``scale``."""
    x0, y0, w, h = p.area
    tmax = scale(ymax)
    for counts, colour in series:
        if not counts:
            continue
        bx = w / len(counts)
        ys = [y0 + h * (1 - scale(c) / tmax) for c in counts]
        outline = "".join(f"V{num(y)}H{num(x0 + bx * (i + 1))}" for i, y in enumerate(ys))
        base = num(y0 + h)
        p.parts.append(path(f"M{num(x0)},{base}{outline}V{base}Z", fill=colour, opacity=0.15, width=0))
        p.parts.append(path(f"M{num(x0)},{num(ys[0])}{outline}", stroke=colour, cls="step"))


def vline(p: Panel, x: float, colour: str = INK) -> None:
    """A dashed vertical line across the plot area at ``x`` (a fraction of its width, kept inside)."""
    x0, y0, w, h = p.area
    at = x0 + w * min(max(x, 0.0), 1.0)
    p.parts.append(line(at, y0, at, y0 + h, colour, width=1.5, dash=True, cls="threshold"))


# ----------------------------------------------------------------------------- images


def _group(p: Panel, dx: float, dy: float) -> str:
    return f'<g transform="translate({num(dx)} {num(dy)})">{"".join(p.parts)}</g>'


def stack(panels: list[Panel], gap: float = 20) -> Panel:
    """Panels one under another, ``gap`` px apart (as wide as the widest)."""
    height = sum(p.height for p in panels) + gap * (len(panels) - 1)
    out, y = Panel(max(p.width for p in panels), height), 0.0
    for p in panels:
        out.parts.append(_group(p, 0, y))
        y += p.height + gap
    return out


def beside(panels: list[Panel]) -> Panel:
    """Panels side by side (as high as the highest)."""
    out, x = Panel(sum(p.width for p in panels), max(p.height for p in panels)), 0.0
    for p in panels:
        out.parts.append(_group(p, x, 0))
        x += p.width
    return out


def document(p: Panel, title: str) -> bytes:
    """The SVG file: a white background (the Hub may show it on a dark page), ``title`` for screen readers."""
    w, h = num(p.width), num(p.height)
    head = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="{FONT}" role="img">'
        f'<title>{esc(title)}</title><rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>'
    )
    return (head + "\n".join(p.parts) + "</svg>\n").encode("utf-8")
