"""The card's plots: PNG bytes drawn with matplotlib (Agg) from stats.json alone.

Each function takes the stats dict and returns a PNG; with nothing to show it
still returns an image that says why (an empty run, a phase that did not run).
PNGs carry no software version, so the same stats give the same bytes.

Labels come from the data (hosts, languages, stage names): every text is drawn
as plain text (``text.parse_math`` off, no TeX), so ``$\\foo$.example.com`` is a
host, not a formula that fails to parse; control characters become spaces.  A
plot that fails anyway costs only itself: :func:`draw_all` logs it and the card
says the plot is missing.
"""

from __future__ import annotations

import io
import logging
import warnings

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display on workers or in CI
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pipeline.card.escape import one_line  # noqa: E402

log = logging.getLogger(__name__)

#: Every text drawn as it is: no mathtext (``$...$``), no TeX, whatever the user's matplotlibrc says.
PLAIN_TEXT = {"text.parse_math": False, "text.usetex": False}
KEPT, REMOVED, GREY = "#2b6cb0", "#c05621", "#a0aec0"
TOP = 20


def _png(fig) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs (a host in a script DejaVu lacks) are not errors
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _empty(ax, why: str) -> None:
    ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=12, color="#4a5568", wrap=True)
    ax.set_axis_off()


def _short(label, n: int = 48) -> str:
    """A data string as a one-line label of at most ``n`` characters."""
    label = one_line(label)
    return label if len(label) <= n else label[: n - 1] + "…"


def funnel(stats: dict) -> bytes:
    rows = stats["funnel"][1:]  # from the HTTP responses on (the other WARC records would dwarf every bar)
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(rows) + 1.2))
    if not rows or rows[0]["in"] == 0:
        _empty(ax, "no HTTP responses were read")
        return _png(fig)
    y = np.arange(len(rows))[::-1]
    outs = [r["out"] for r in rows]
    ax.barh(y, [r["in"] for r in rows], color=REMOVED, alpha=0.35, label="removed at this step")
    ax.barh(y, outs, color=[KEPT if r["status"] == "ran" else GREY for r in rows], label="left after this step")
    ax.set_yticks(y, [_short(r["label"]) for r in rows], fontsize=8)
    top = max(r["in"] for r in rows)
    for yi, r in zip(y, rows):
        text = f"{r['out']:,}" + (f"  (-{r['removed']:,})" if r["removed"] else "")
        ax.text(r["in"] + top * 0.01, yi, text, va="center", fontsize=7)
    ax.set_xlim(0, top * 1.25)
    ax.set_xlabel("documents (HTTP responses, then what each step left)")
    ax.set_title("Funnel: what each step kept")
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def languages(stats: dict) -> bytes:
    by_phase = stats["languages"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    phases = list(by_phase)
    if not phases or not any(by_phase[p] for p in phases):
        _empty(ax, "no documents with a language")
        return _png(fig)
    first, last = phases[0], phases[-1]
    langs = list(by_phase[first])[:TOP]
    x = np.arange(len(langs))
    shown = [first] if first == last else [first, last]
    width = 0.8 / len(shown)
    for i, p in enumerate(shown):
        ax.bar(x + i * width, [by_phase[p].get(lang, 0) for lang in langs], width, label=_short(p),
               color=GREY if i == 0 and len(shown) > 1 else KEPT)
    ax.set_xticks(x + width * (len(shown) - 1) / 2, [_short(lang, 24) for lang in langs], rotation=45, fontsize=8)
    ax.set_ylabel("documents")
    ax.set_title(f"Languages (top {len(langs)})")
    ax.legend(fontsize=8)
    return _png(fig)


def _hist_ax(ax, edges_labels: list[str], series: list[tuple[str, list[int], str]], xlabel: str) -> None:
    x = np.arange(len(edges_labels) + 1)  # bin i spans [i, i + 1)
    for label, counts, color in series:
        closed = [*counts, counts[-1]] if counts else [0]
        ax.step(x[:len(closed)], closed, where="post", label=label, color=color, linewidth=1.6)
        ax.fill_between(x[:len(closed)], closed, step="post", alpha=0.15, color=color)
    ax.set_xticks(x[:-1], edges_labels, rotation=45, fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_yscale("symlog", linthresh=1)  # small bins stay visible beside a tall one
    ax.set_ylim(bottom=0)
    ax.set_ylabel("documents (log)")
    ax.legend(fontsize=8)


def _k(v: float) -> str:
    for unit, div in (("M", 1_000_000), ("k", 1_000)):
        if v >= div:
            return f"{v / div:g}{unit}"
    return f"{v:g}"


def length(stats: dict) -> bytes:
    ln = stats["length"]
    fig, ax = plt.subplots(figsize=(9, 4))
    before, after = ln["before"], ln["after"]
    if not before["documents"] and not after["documents"]:
        _empty(ax, "no documents")
        return _png(fig)
    series = [(f"{_short(before['phase'])} ({before['documents']:,})", before["hist"], GREY)]
    if after["phase"] != before["phase"]:
        series.append((f"{_short(after['phase'])} ({after['documents']:,})", after["hist"], KEPT))
    _hist_ax(ax, [_k(e) for e in ln["edges"]], series, "characters (bin start; log scale)")
    ax.set_title("Document length, before and after")
    return _png(fig)


#: Languages drawn per classifier (the most scored ones).
PLOT_LANGUAGES = 4
LANGUAGE_COLORS = [KEPT, REMOVED, "#2f855a", "#6b46c1"]


def classifiers(stats: dict) -> bytes:
    """One panel per classifier: its score's distribution per language where it was scored (the most scored
    languages), and its threshold."""
    c = stats["classifiers"]
    entries = c.get("entries", [])
    fig, axes = plt.subplots(max(len(entries), 1), 1, figsize=(9, 3.2 * max(len(entries), 1)), squeeze=False)
    if not entries:
        _empty(axes[0][0], "no classifier scored this run")
        return _png(fig)
    for ax, e in zip(axes[:, 0], entries):
        first = next(iter(e["by_language"]), None)
        langs = list((e["by_language"].get(first) or {}).items())[:PLOT_LANGUAGES]
        if not langs:
            _empty(ax, f"{_short(e['name'])}: no documents scored")
            continue
        series = [(f"{_short(l, 12)} ({v['scored']:,})", v["hist"], col) for (l, v), col in zip(langs, LANGUAGE_COLORS)]
        _hist_ax(ax, [f"{x:.2f}" for x in c["edges"][:-1]], series, f"{_short(e['column'])} (bin start), in {_short(first)}")
        if e["threshold"] is not None:
            ax.axvline(e["threshold"] * c["bins"], color="black", linestyle="--", label=f"threshold {e['threshold']} ({e['remove']})")
            ax.legend(fontsize=8)
        ax.set_title(f"{_short(e['name'])}" + (" (demonstration model)" if e["demonstration"] else ""))
    fig.tight_layout()
    return _png(fig)


def dup_clusters(stats: dict) -> bytes:
    d = stats["dedup"]
    fig, ax = plt.subplots(figsize=(9, 4))
    if d["status"] != "ran":
        _empty(ax, "deduplication did not run")
        return _png(fig)
    if not d["clusters"]:
        _empty(ax, "no duplicate clusters")
        return _png(fig)
    sizes = list(d["clusters"])
    bars = ax.bar(range(len(sizes)), list(d["clusters"].values()), color=KEPT)
    ax.bar_label(bars, fontsize=8)
    ax.set_xticks(range(len(sizes)), sizes, fontsize=8)
    ax.set_xlabel("cluster size (documents, the kept one included)")
    ax.set_ylabel("clusters")
    ax.set_title("Duplicate cluster sizes")
    return _png(fig)


def pii(stats: dict) -> bytes:
    p = stats["pii"]
    fig, ax = plt.subplots(figsize=(9, 4))
    if not p["present"]:
        _empty(ax, "PII redaction did not run")
        return _png(fig)
    ents = list(p["entities"])
    x = np.arange(len(ents))
    ax.bar(x - 0.2, [p["entities"][e]["documents"] for e in ents], 0.4, label="documents", color=KEPT)
    ax.bar(x + 0.2, [p["entities"][e]["findings"] for e in ents], 0.4, label="findings", color=REMOVED)
    ax.set_xticks(x, [_short(e.lower(), 24) for e in ents], rotation=30, fontsize=8)
    ax.set_title("PII found and redacted, per entity")
    ax.legend(fontsize=8)
    return _png(fig)


def hosts(stats: dict) -> bytes:
    h = stats["hosts"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.3 * max(len(h["kept"]), len(h["removed"]), 4) + 1.5))
    for ax, key, color in ((axes[0], "kept", KEPT), (axes[1], "removed", REMOVED)):
        rows = h[key]
        if not rows:
            _empty(ax, f"no {key} documents")
            continue
        y = np.arange(len(rows))[::-1]
        ax.barh(y, [n for _, n in rows], color=color)
        ax.set_yticks(y, [_short(d, 36) for d, _ in rows], fontsize=7)
        ax.set_title(f"Top hosts, {key} documents")
    return _png(fig)


def mix(stats: dict) -> bytes:
    """Per named source: its share of the drawn tokens against its target, and its epochs."""
    m = stats.get("mix") or {"present": False}
    fig, ax = plt.subplots(figsize=(9, 4))
    if not m["present"]:
        _empty(ax, "no training mix (every document once)")
        return _png(fig)
    names = list(m["sources"])
    x = np.arange(len(names))
    got = [m["sources"][k]["share"] or 0 for k in names]
    target = [m["sources"][k]["target_share"] for k in names]
    if any(t is not None for t in target):
        ax.bar(x - 0.2, [t or 0 for t in target], 0.4, label="target share", color=GREY)
    bars = ax.bar(x + 0.2 if any(t is not None for t in target) else x, got, 0.4, label="share of the drawn tokens", color=KEPT)
    ax.bar_label(bars, [f"{e:.2f} epochs" if (e := m["sources"][k]["epochs"]) is not None else "" for k in names], fontsize=8)
    ax.set_xticks(x, [_short(k or "all", 24) for k in names], fontsize=8)
    ax.set_ylabel("share of the output tokens")
    ax.set_title("Training mix: share of tokens per source")
    ax.legend(fontsize=8)
    return _png(fig)


PLOTS = {"funnel": funnel, "languages": languages, "length": length, "classifiers": classifiers,
         "dup_clusters": dup_clusters, "pii": pii, "hosts": hosts, "mix": mix}


def draw(fn, stats: dict) -> bytes:
    """One plot as PNG bytes, every text plain; a failed plot leaves no open figure behind."""
    before = set(plt.get_fignums())
    try:
        with plt.rc_context(PLAIN_TEXT):
            return fn(stats)
    finally:
        for num in set(plt.get_fignums()) - before:
            plt.close(num)


def draw_all(stats: dict) -> tuple[dict[str, bytes], dict[str, str]]:
    """``{"<name>.png": bytes}`` of every plot that could be drawn, and ``{"<name>.png": error type}`` of the others."""
    images, failed = {}, {}
    for name, fn in PLOTS.items():
        try:
            images[f"{name}.png"] = draw(fn, stats)
        except Exception as e:  # noqa: BLE001 - a plot is an illustration: its failure must not cost the card
            log.warning("card: the %s plot could not be drawn: %s", name, one_line(f"{type(e).__name__}: {e}")[:500])
            failed[f"{name}.png"] = type(e).__name__  # the message may quote the data: only the log has it
    return images, failed
