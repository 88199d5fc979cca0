"""The card's plots as SVG (pipeline/card/plots.py, svg.py): well-formed and inert whatever the labels,
faithful to the stats they draw, and the same bytes for the same stats."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET

import pytest

from pipeline.card import plots, svg

NS = "{http://www.w3.org/2000/svg}"
#: Every element the plots write: nothing that runs, embeds or links.
TAGS = {"svg", "title", "rect", "line", "path", "text", "g"}


def parse_svg(data: bytes) -> ET.Element:
    """The image's root, after checking it is strict UTF-8, well-formed SVG of our elements only, with no link,
    event handler or external reference."""
    data.decode("utf-8")  # strict: a lone surrogate would have failed to encode, or be here as garbage
    root = ET.fromstring(data)
    assert root.tag == f"{NS}svg"
    assert float(root.get("width")) >= 100 and float(root.get("height")) >= 100
    for el in root.iter():
        assert el.tag.removeprefix(NS) in TAGS, el.tag
        for name, value in el.attrib.items():
            assert "href" not in name.lower() and not name.lower().startswith("on"), (el.tag, name)
            assert "url(" not in value and "javascript:" not in value.lower(), (el.tag, name, value)
    return root


def texts(root: ET.Element) -> list[str]:
    return [el.text or "" for el in root.iter(f"{NS}text")]


def hist(peak_at: int, peak: int = 900) -> list[int]:
    return [peak if i == peak_at else (i % 4) * 3 for i in range(20)]


def stats() -> dict:
    """Every field the plots read, with known numbers."""
    funnel = [{"step": "records", "label": "HTTP responses", "status": "ran", "in": 1000, "removed": 200, "out": 800}]
    for step, status, removed in (
        ("read", "ran", 50),
        ("langid", "ran", 150),
        ("dedup", "ran", 300),
        ("quality", "disabled", 0),
    ):
        before = funnel[-1]["out"]
        funnel.append(
            {
                "step": step,
                "label": f"{step} step",
                "status": status,
                "in": before,
                "removed": removed,
                "out": before - removed,
            }
        )
    edges = [
        0,
        1,
        2,
        5,
        10,
        20,
        50,
        100,
        200,
        500,
        1000,
        2000,
        5000,
        10_000,
        20_000,
        50_000,
        100_000,
        200_000,
        500_000,
        1_000_000,
    ]
    return {
        "funnel": funnel,
        "languages": {"extracted": {"en": 500, "de": 200, "fr": 40}, "final": {"en": 200, "de": 90, "fr": 10}},
        "length": {
            "edges": edges,
            "before": {"phase": "extracted", "documents": 1000, "hist": hist(11)},
            "after": {"phase": "final", "documents": 500, "hist": hist(12, 400)},
        },
        "classifiers": {
            "bins": 20,
            "edges": [i / 20 for i in range(21)],
            "entries": [
                {
                    "name": "quality",
                    "column": "quality_score",
                    "demonstration": "a demo",
                    "threshold": 0.5,
                    "remove": "below",
                    "by_language": {
                        "extracted": {
                            "en": {"scored": 500, "hist": hist(17)},
                            "de": {"scored": 200, "hist": hist(3, 50)},
                        }
                    },
                }
            ],
        },
        "dedup": {"status": "ran", "clusters": {"2": 120, "3": 30, "5": 6}},
        "pii": {
            "present": True,
            "entities": {
                "EMAIL_ADDRESS": {"documents": 12, "findings": 20},
                "PHONE_NUMBER": {"documents": 4, "findings": 5},
            },
        },
        "hosts": {"kept": [["a.example", 40], ["b.example", 10]], "removed": [["spam.example", 70]]},
        "mix": {
            "present": True,
            "sources": {
                "web": {"share": 0.7, "target_share": 0.6, "epochs": 1.0},
                "books": {"share": 0.3, "target_share": 0.4, "epochs": 2.5},
            },
        },
    }


EVIL = [
    "<script>alert(1)</script>",
    "&amp;",
    "]]>",
    "\"'",
    "tab\tnul\x00esc\x1b[31m del\x7f ls\u2028end",
    "lone\ud800surrogate",
    "h" * 5000 + ".example",
    "مثال.اختبار",
    "\u202eevil",
    "\ufffe\uffff",
]


def hostile() -> dict:
    """stats() with a hostile label in every field a plot prints."""
    s = stats()
    for row, label in zip(s["funnel"][1:], EVIL, strict=False):
        row["label"] = label
    s["funnel"][1:1] = [{**s["funnel"][1], "label": label} for label in EVIL[len(s["funnel"]) - 1 :]]
    s["languages"] = {p: {**{e: 5 for e in EVIL}, **c} for p, c in s["languages"].items()}
    s["length"]["before"]["phase"], s["length"]["after"]["phase"] = EVIL[0], EVIL[1] + EVIL[6]
    e = s["classifiers"]["entries"][0]
    e.update(
        name=EVIL[0],
        column=EVIL[2],
        remove=EVIL[3],
        by_language={EVIL[1]: {lang: {"scored": 3, "hist": hist(5)} for lang in EVIL}},
    )
    s["classifiers"]["entries"].append({**copy.deepcopy(e), "name": EVIL[6], "threshold": "<b>not a number</b>"})
    s["dedup"]["clusters"] = {**{e: 1 for e in EVIL}, **s["dedup"]["clusters"]}
    s["pii"]["entities"].update({e: {"documents": 1, "findings": 2} for e in EVIL})
    s["hosts"]["kept"] = [[e, 9] for e in EVIL]
    s["hosts"]["removed"] = [[e, 3] for e in reversed(EVIL)]
    s["mix"]["sources"] = {e: {"share": 0.1, "target_share": None, "epochs": None} for e in EVIL}
    return s


def test_hostile_labels_give_well_formed_inert_svg_with_the_text_escaped():
    images, failed = plots.draw_all(hostile())
    assert failed == {} and set(images) == {f"{name}.svg" for name in plots.PLOTS}
    for name, data in images.items():
        root = parse_svg(data)
        shown = texts(root)
        # markup, CDATA ends and quotes reach the file only as references, and come back as the same text
        assert b"<script" not in data and b"]]>" not in data and b"\"'" not in data, name
        assert any(t.startswith("<script>al") for t in shown), name  # whole, or cut as a long label
        assert b"&lt;script&gt;al" in data and b"&amp;amp;" in data, name
        # no control character, no character XML does not allow; the bidi override is gone too
        assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", data), name
        assert not any(ch in t for t in shown for ch in "\ud800\ufffe\uffff\u202e\u2028"), name
        # a 5,000-character host is cut like every long label
        assert max(len(t) for t in shown) < 100 and b"h" * 100 not in data, name
    hosts = texts(parse_svg(images["hosts.svg"]))
    assert "lone\ufffdsurrogate" in hosts and "مثال.اختبار" in hosts and "tab nul esc [31m del  ls end" in hosts
    assert "\"'" in hosts and "&amp;" in hosts and "]]>" in hosts


def _rects(data: bytes, cls: str) -> list[dict]:
    return [r.attrib for r in parse_svg(data).iter(f"{NS}rect") if r.get("class") == cls]


def test_the_funnel_bars_are_the_counts_to_scale():
    s = stats()
    rows = s["funnel"][1:]
    outs, ins = _rects(plots.funnel(s), "out"), _rects(plots.funnel(s), "in")
    assert len(outs) == len(ins) == len(rows)
    scale = float(ins[0]["width"]) / rows[0]["in"]
    for r, o, i in zip(rows, outs, ins, strict=False):
        assert float(o["width"]) == pytest.approx(r["out"] * scale, abs=0.1)
        assert float(i["width"]) == pytest.approx(r["in"] * scale, abs=0.1)
        assert o["fill"] == (plots.KEPT if r["status"] == "ran" else plots.GREY)
    assert [float(o["y"]) for o in outs] == sorted(
        float(o["y"]) for o in outs
    )  # the steps top to bottom, in run order
    assert "300 (-300)" in texts(parse_svg(plots.funnel(s)))


def _steps(d: str) -> list[tuple[float, float, float]]:
    """The horizontal runs (x from, x to, y) of a step outline ``M x,y V y H x V y H x ...``."""
    x, y = map(float, re.match(r"M([\d.]+),([\d.]+)", d).groups())
    runs = []
    for cmd, v in re.findall(r"([VH])([\d.]+)", d):
        if cmd == "V":
            y = float(v)
        else:
            runs.append((x, float(v), y))
            x = float(v)
    return runs


def test_the_histograms_highest_step_is_the_fullest_bin_and_the_threshold_is_in_place():
    s = stats()
    paths = [p.get("d") for p in parse_svg(plots.length(s)).iter(f"{NS}path") if p.get("class") == "step"]
    assert len(paths) == 2
    for d, side in zip(paths, ("before", "after"), strict=False):
        counts = s["length"][side]["hist"]
        runs = _steps(d)
        assert len(runs) == len(counts)
        top = min(range(len(runs)), key=lambda i: runs[i][2])  # SVG's y grows downwards
        assert top == counts.index(max(counts))
        # taller bins are higher (symlog is monotonic), equal bins level
        for (_, _, ya), (_, _, yb), ca, cb in zip(runs, runs[1:], counts, counts[1:], strict=False):
            assert (ya < yb) == (ca > cb) and (ya == yb) == (ca == cb)
    root = parse_svg(plots.classifiers(s))
    (line,) = [el for el in root.iter(f"{NS}line") if el.get("class") == "threshold"]
    runs = _steps(next(p.get("d") for p in root.iter(f"{NS}path") if p.get("class") == "step"))
    left, right = runs[0][0], runs[-1][1]
    assert float(line.get("x1")) == pytest.approx(left + (right - left) * 0.5, abs=0.1)
    assert any("threshold 0.5 (below)" in t for t in texts(root))


def test_vertical_bars_are_the_counts_to_scale():
    s = stats()
    bars = _rects(plots.dup_clusters(s), "bar")
    counts = list(s["dedup"]["clusters"].values())
    scale = float(bars[0]["height"]) / counts[0]
    assert [float(b["height"]) for b in bars] == pytest.approx([c * scale for c in counts], abs=0.1)
    assert {"120", "30", "6"} <= set(texts(parse_svg(plots.dup_clusters(s))))
    pii = _rects(plots.pii(s), "bar")  # documents then findings, per entity
    values = [12, 4, 20, 5]
    assert [float(b["height"]) / v for b, v in zip(pii, values, strict=False)] == pytest.approx(
        [float(pii[0]["height"]) / 12] * 4, rel=0.01
    )
    assert "2.50 epochs" in texts(parse_svg(plots.mix(s)))


def test_the_same_stats_give_the_same_bytes():
    first, _ = plots.draw_all(stats())
    again, _ = plots.draw_all(copy.deepcopy(stats()))
    assert first == again
    assert plots.draw_all(hostile())[0] == plots.draw_all(hostile())[0]


@pytest.mark.parametrize(
    "name, change, why",
    [
        ("funnel", lambda s: s["funnel"][1].update({"in": 0}), "no HTTP responses were read"),
        ("languages", lambda s: s.update(languages={}), "no documents with a language"),
        ("length", lambda s: [s["length"][k].update(documents=0) for k in ("before", "after")], "no documents"),
        ("classifiers", lambda s: s["classifiers"].update(entries=[]), "no classifier scored this run"),
        ("dup_clusters", lambda s: s.update(dedup={"status": "disabled"}), "deduplication did not run"),
        ("pii", lambda s: s.update(pii={"present": False}), "PII redaction did not run"),
        ("mix", lambda s: s.update(mix={"present": False}), "no training mix (every document once)"),
    ],
)
def test_a_plot_with_nothing_to_show_says_why(name, change, why):
    s = stats()
    change(s)
    assert texts(parse_svg(plots.PLOTS[name](s))) == [why]


def test_hosts_with_nothing_removed_still_draws_the_kept_side():
    s = stats()
    s["hosts"]["removed"] = []
    shown = texts(parse_svg(plots.hosts(s)))
    assert "no removed documents" in shown and "a.example" in shown and "Top hosts, kept documents" in shown


def test_text_is_escaped_and_cleaned_for_xml():
    assert svg.esc("<a href='x'>&\"") == "&lt;a href=&#x27;x&#x27;&gt;&amp;&quot;"
    assert svg.clean("a\ud800b\udfff\ufffe\uffff\x00\x0b\n") == "a\ufffdb\ufffd\ufffd\ufffd   "
    assert svg.clean("\U0001f600 中文") == "\U0001f600 中文"  # astral and CJK characters are allowed
