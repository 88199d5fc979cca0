"""The card's plots: SVG bytes written by hand (pipeline/card/svg.py) from stats.json alone.

Eight plots: the funnel (what each step left, and removed, of the HTTP responses), languages (the
first phase against the last, top 20), document length before and after (step histograms on a
symlog axis), each classifier's scores per language with its threshold, duplicate cluster sizes,
PII found per entity, the top hosts kept and removed, and the training mix (drawn share against
target, epochs).  Each function takes the stats dict and returns an SVG; with nothing to show it
still returns an image that says why (an empty run, a phase that did not run).

Why SVG by hand: matplotlib cost the driver 0.24 s to import, 0.80 s to draw the eight PNGs and 61 MB
at the end of every run, on one core (most of the card phase; its own SVG backend is no faster).
Written here they take 1.8 ms and 1 MB, the module 5 ms to import (a real run's stats, best of 3).  The same
stats give the same bytes (fixed decimals, no dates, no versions).

Labels come from the data (hosts, languages, stage and classifier names) and may be hostile: they
are cut to one short line here and XML-escaped by svg.py, which writes no script, link or external
resource.  A plot that fails anyway costs only itself: :func:`draw_all` logs it and the card says
the plot is missing.
"""

from __future__ import annotations

import logging
import math

from pipeline.card import svg
from pipeline.card.escape import one_line

log = logging.getLogger(__name__)

KEPT, REMOVED, GREY = "#2b6cb0", "#c05621", "#a0aec0"
TOP = 20
ROW = 24  # px: one bar of a horizontal bar chart, its gap included


def _short(label, n: int = 48) -> str:
    """A data string as a one-line label of at most ``n`` characters."""
    label = one_line(label)
    return label if len(label) <= n else label[: n - 1] + "…"


def _empty(why: str, title: str) -> bytes:
    return svg.document(svg.empty(why), title)


# ----------------------------------------------------------------------------- funnel


def funnel(stats: dict) -> bytes:
    """Per step from the HTTP responses on (the other WARC records would dwarf every bar): what it left, in
    front of what came in (the light part is what it removed); grey where the step did not run."""
    title = "Funnel: what each step kept"
    rows = stats["funnel"][1:]
    if not rows or rows[0]["in"] == 0:
        return _empty("no HTTP responses were read", title)
    labels = [_short(r["label"]) for r in rows]
    ends = [f"{r['out']:,}" + (f" (-{r['removed']:,})" if r["removed"] else "") for r in rows]
    idle = [r["status"] != "ran" for r in rows]
    keys = [("removed at this step", REMOVED, "faint"), ("left after this step", KEPT, "box")]
    keys += [("did not run", GREY, "box")] if any(idle) else []
    p = svg.panel(title, plot_height=ROW * len(rows), left=svg.label_room(labels), bottom=48, legend=keys)
    ins, outs = [r["in"] for r in rows], [r["out"] for r in rows]
    xmax = svg.reach(ins, ends, p.area[2])
    svg.x_linear(p, xmax, "documents (HTTP responses, then what each step left)")
    svg.hbars(
        p,
        [(ins, [REMOVED] * len(rows), 0.35, "in"), (outs, [GREY if i else KEPT for i in idle], None, "out")],
        xmax,
        ends,
    )
    svg.y_categories(p, labels)
    svg.frame(p)
    return svg.document(p, title)


# ----------------------------------------------------------------------------- vertical bars


def _columns(
    title: str,
    labels: list[str],
    series: list[tuple[str, list[float], str]],
    ylabel: str,
    *,
    xlabel: str = "",
    tops: list[list[str] | None] = (),
    integer: bool = True,
) -> bytes:
    """Grouped vertical bars, one group per label (``series``: legend label, values, colour)."""
    peak = max((v for _, values, _ in series for v in values), default=0)
    vmax = svg.nice_max(peak * (1.15 if any(tops) else 1.0), integer=integer)  # room for the labels over the bars
    left = svg.y_room(vmax, integer=integer)
    slot = (svg.WIDTH - left - 20) / max(len(labels), 1)
    left = max(left, svg.left_reach(labels, slot))  # a long first label, turned, would leave the image
    bottom = svg.below_axis(labels, slot) + (2 * svg.FONT if xlabel else 8)
    keys = [(name, colour, "box") for name, _, colour in series] if len(series) > 1 or series[0][0] else []
    p = svg.panel(title, plot_height=260, left=left, bottom=bottom, legend=keys)
    svg.y_linear(p, vmax, ylabel, integer=integer)
    centres = svg.vbars(p, [(values, colour, "bar") for _, values, colour in series], vmax, tops)
    svg.frame(p)
    svg.x_categories(p, labels, centres, xlabel)
    return svg.document(p, title)


def languages(stats: dict) -> bytes:
    """Documents per language (the first phase's top 20) in the first phase and in the last."""
    title = "Languages"
    by_phase = stats["languages"]
    phases = list(by_phase)
    langs = list(by_phase[phases[0]])[:TOP] if phases else []
    if not langs:
        return _empty("no documents with a language", title)
    first, last = phases[0], phases[-1]
    shown = [first] if first == last else [first, last]
    series = [
        (_short(p), [by_phase[p].get(lang, 0) for lang in langs], GREY if i == 0 and len(shown) > 1 else KEPT)
        for i, p in enumerate(shown)
    ]
    return _columns(f"Languages (top {len(langs)})", [_short(lang, 24) for lang in langs], series, "documents")


def dup_clusters(stats: dict) -> bytes:
    title = "Duplicate cluster sizes"
    d = stats["dedup"]
    if d["status"] != "ran":
        return _empty("deduplication did not run", title)
    if not d["clusters"]:
        return _empty("no duplicate clusters", title)
    counts = list(d["clusters"].values())
    return _columns(
        title,
        [_short(s, 12) for s in d["clusters"]],
        [("", counts, KEPT)],
        "clusters",
        xlabel="cluster size (documents, the kept one included)",
        tops=[[f"{v:,}" for v in counts]],
    )


def pii(stats: dict) -> bytes:
    title = "PII found and redacted, per entity"
    p = stats["pii"]
    if not p["present"]:
        return _empty("PII redaction did not run", title)
    ents = list(p["entities"])
    if not ents:
        return _empty("no PII entity was looked for", title)
    series = [
        ("documents", [p["entities"][e]["documents"] for e in ents], KEPT),
        ("findings", [p["entities"][e]["findings"] for e in ents], REMOVED),
    ]
    return _columns(title, [_short(e.lower(), 24) for e in ents], series, "documents, findings")


def mix(stats: dict) -> bytes:
    """Per named source: its share of the drawn tokens against its target, and its epochs."""
    title = "Training mix: share of tokens per source"
    m = stats.get("mix") or {"present": False}
    if not m["present"]:
        return _empty("no training mix (every document once)", title)
    names = list(m["sources"])
    if not names:
        return _empty("no source in the training mix", title)
    src = m["sources"]
    targets = [src[k]["target_share"] for k in names]
    series = [("target share", [t or 0 for t in targets], GREY)] if any(t is not None for t in targets) else []
    series.append(("share of the drawn tokens", [src[k]["share"] or 0 for k in names], KEPT))
    epochs = [f"{e:.2f} epochs" if (e := src[k]["epochs"]) is not None else "" for k in names]
    tops = [None] * (len(series) - 1) + [epochs]
    return _columns(
        title, [_short(k or "all", 24) for k in names], series, "share of the output tokens", tops=tops, integer=False
    )


# ----------------------------------------------------------------------------- histograms


def _histogram(
    title: str,
    bin_labels: list[str],
    series: list[tuple[str, list[int], str]],
    xlabel: str,
    threshold: tuple[float, str] | None = None,
) -> svg.Panel:
    """Step histograms (``series``: legend label, counts, colour) on a symlog y axis (linthresh 1: a bin of one
    document stays visible beside one of thousands), tick labels at the bins' starts, and a dashed threshold
    (a fraction of the x axis, and its legend label)."""
    keys = [(label, colour, "line") for label, _, colour in series]
    keys += [(threshold[1], svg.INK, "dashed")] if threshold else []
    bins = max((len(c) for _, c, _ in series), default=len(bin_labels)) or 1
    left = 60
    slot = (svg.WIDTH - left - 20) / bins
    p = svg.panel(
        title, plot_height=200, left=left, bottom=svg.below_axis(bin_labels, slot) + 2 * svg.FONT, legend=keys
    )
    peak = max((c for _, counts, _ in series for c in counts), default=0)
    top = max(peak * 1.5, 1)  # room over the highest bin: 1.5x is a small step on a log axis
    svg.y_symlog(p, top, "documents (log)")
    svg.steps(p, [(counts, colour) for _, counts, colour in series], top)
    if threshold:
        svg.vline(p, threshold[0])
    svg.frame(p)
    x0, _, w, _ = p.area
    svg.x_categories(p, bin_labels, [x0 + w * i / bins for i in range(len(bin_labels))], xlabel)
    return p


def length(stats: dict) -> bytes:
    title = "Document length, before and after"
    ln = stats["length"]
    before, after = ln["before"], ln["after"]
    if not before["documents"] and not after["documents"]:
        return _empty("no documents", title)
    series = [(f"{_short(before['phase'])} ({before['documents']:,})", before["hist"], GREY)]
    if after["phase"] != before["phase"]:
        series.append((f"{_short(after['phase'])} ({after['documents']:,})", after["hist"], KEPT))
    p = _histogram(title, [svg.compact(e) for e in ln["edges"]], series, "characters (bin start; log scale)")
    return svg.document(p, title)


#: Languages drawn per classifier (the most scored ones).
PLOT_LANGUAGES = 4
LANGUAGE_COLORS = [KEPT, REMOVED, "#2f855a", "#6b46c1"]


def _threshold(e: dict) -> tuple[float, str] | None:
    """Where the classifier's threshold is drawn, and its label; none for a threshold that is not a number."""
    t = e["threshold"]
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        return None
    return float(t), _short(f"threshold {t} ({one_line(e['remove'])})")


def _classifier(e: dict, c: dict) -> svg.Panel:
    title = _short(e["name"]) + (" (demonstration model)" if e["demonstration"] else "")
    first = next(iter(e["by_language"]), None)
    langs = list((e["by_language"].get(first) or {}).items())[:PLOT_LANGUAGES]
    if not langs:
        return svg.empty(f"{_short(e['name'])}: no documents scored", height=200)
    series = [
        (f"{_short(lang, 12)} ({v['scored']:,})", v["hist"], col)
        for (lang, v), col in zip(langs, LANGUAGE_COLORS, strict=False)
    ]
    xlabel = f"{_short(e['column'])} (bin start), in {_short(first)}"
    return _histogram(title, [f"{x:.2f}" for x in c["edges"][:-1]], series, xlabel, _threshold(e))


def classifiers(stats: dict) -> bytes:
    """One panel per classifier: its score's distribution per language where it was scored (the most scored
    languages), and its threshold."""
    c = stats["classifiers"]
    entries = c.get("entries", [])
    if not entries:
        return _empty("no classifier scored this run", "Classifiers")
    return svg.document(svg.stack([_classifier(e, c) for e in entries]), "Classifier scores per language")


# ----------------------------------------------------------------------------- hosts


def _hosts_panel(rows: list, key: str, colour: str, n: int) -> svg.Panel:
    """One side of the hosts plot: its top hosts as bars with their counts, in ``n`` rows (the longer side's, at
    least 4) so that both sides' rows and axes line up."""
    width = svg.WIDTH / 2
    if not rows:
        return svg.empty(f"no {key} documents", width=width, height=svg.TITLE_ROW + ROW * n + 48)
    labels = [_short(d, 36) for d, _ in rows]
    counts = [c for _, c in rows]
    p = svg.panel(
        f"Top hosts, {key} documents", width=width, plot_height=ROW * n, left=svg.label_room(labels), bottom=48
    )
    ends = [f"{c:,}" for c in counts]
    xmax = svg.reach(counts, ends, p.area[2])
    svg.x_linear(p, xmax, "documents")
    svg.hbars(p, [(counts, [colour] * len(rows), None, "host")], xmax, ends, slots=n)
    svg.y_categories(p, labels, slots=n)
    svg.frame(p)
    return p


def hosts(stats: dict) -> bytes:
    h = stats["hosts"]
    n = max(len(h["kept"]), len(h["removed"]), 4)
    sides = [_hosts_panel(h[key], key, colour, n) for key, colour in (("kept", KEPT), ("removed", REMOVED))]
    return svg.document(svg.beside(sides), "Top hosts, kept and removed documents")


PLOTS = {
    "funnel": funnel,
    "languages": languages,
    "length": length,
    "classifiers": classifiers,
    "dup_clusters": dup_clusters,
    "pii": pii,
    "hosts": hosts,
    "mix": mix,
}


def draw_all(stats: dict) -> tuple[dict[str, bytes], dict[str, str]]:
    """``{"<name>.svg": bytes}`` of every plot that could be
    drawn, and ``{"<name>.svg": error type}`` of the others."""
    images, failed = {}, {}
    for name, fn in PLOTS.items():
        if name == "mix" and not (stats.get("mix") or {}).get("present"):
            continue  # drawn only for a run with a training mix (the card links it from its section)
        try:
            images[f"{name}.svg"] = fn(stats)
        except Exception as e:  # noqa: BLE001 - a plot is an illustration: its failure must not cost the card
            log.warning("card: the %s plot could not be drawn: %s", name, one_line(f"{type(e).__name__}: {e}")[:500])
            failed[f"{name}.svg"] = type(e).__name__  # the message may quote the data: only the log has it
    return images, failed
