"""The dataset card as an attack surface: hostile strings in every field of stats.json, and in the data
of an output, reach the card as text (checked with a real Markdown parser: markdown-it-py, CommonMark
with GFM tables, raw HTML on as on the Hub), and data strings in the plots (SVG) are escaped text."""

from __future__ import annotations

import copy
import json
import shlex
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from markdown_it import MarkdownIt

from core.storage import Storage
from pipeline.card import plots
from pipeline.card.build import publish
from pipeline.card.escape import cell, code, fence, one_line, text
from pipeline.card.render import render
from pipeline.card.report import main as report_main
from tests.pipeline.card.test_card_expected import expected, numbers
from tests.pipeline.card.test_card_fixture import make_output
from tests.pipeline.card.test_card_svg import parse_svg, texts


def evil(tag: str) -> str:
    """A value that breaks code spans, tables, HTML blocks, emphasis, links, Hub math and fences if written raw."""
    return (
        f"{tag}`x``<img src=x onerror=alert('{tag}')>|td|</td>\n\n<script>alert(1)</script>\r$\\foo$ *em* _u_ "
        f"[l](javascript:alert(1)) &amp; ~~s~~ \\| # ```\u202eevil"
    )


def shown(tag: str) -> str:
    """What a reader must see of ``evil(tag)``: the same characters on one line."""
    return one_line(evil(tag)).strip()


#: What our own Markdown and HTML produce; anything else came from the data.
ALLOWED = {
    "p",
    "h1",
    "h2",
    "h3",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "code",
    "pre",
    "details",
    "summary",
    "ol",
    "ul",
    "li",
    "br",
    "q",
    "em",
    "strong",
    "img",
    "a",
}
LEAVES = {"td", "th", "code", "li", "summary", "h1", "h2", "h3", "p", "q", "em"}


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each element of LEAVES (descendants included)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list]] = []
        self.texts: list[str] = []
        self.open: list[list] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))
        if tag in LEAVES:
            self.open.append([tag, ""])

    def handle_endtag(self, tag):
        if self.open and self.open[-1][0] == tag:
            self.texts.append(self.open.pop()[1])

    def handle_data(self, data):
        for o in self.open:
            o[1] += data


def split_card(readme: str) -> tuple[dict, str]:
    assert readme.startswith("---\n")
    head, body = readme[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


def rendered(body: str) -> Elements:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    page = Elements()
    page.feed(md.render(body))
    page.close()
    return page


def assert_only_our_html(page: Elements, plot_names: set[str]) -> None:
    for tag, attrs in page.tags:
        assert tag in ALLOWED, f"<{tag} {attrs}> reached the card"
        for name, value in attrs:
            ok = (
                (tag, name) == ("img", "src")
                and value in {f"card/{p}" for p in plot_names}
                or (tag, name) == ("img", "alt")
                or (tag, name, value) == ("a", "href", "card/stats.json")
                or (tag in ("th", "td") and name == "style")
                or (tag, name) == ("code", "class")
                and value in ("language-yaml", "language-bash", "language-python")
            )
            assert ok, f"<{tag} {name}={value!r}> reached the card"


def assert_tables_whole(body: str) -> None:
    """Every table row has as many cells as its header (GFM pads or drops cells silently: count the pipes)."""
    lines = body.split("\n")
    tables = [t.map for t in MarkdownIt("commonmark").enable("table").parse(body) if t.type == "table_open"]
    assert tables
    for first, last in tables:
        cells = {_cells(lines[j]) for j in range(first, last)}
        assert len(cells) == 1, f"a table row has another number of cells: {lines[first:last]}"


def _cells(line: str) -> int:
    """Unescaped pipes of a table source line (GFM's own split: a pipe after a backslash is escaped)."""
    n, prev = 0, ""
    for ch in line:
        if ch == "|" and prev != "\\":
            n += 1
        prev = ch
    return n


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, dict]:
    out = make_output(tmp_path_factory.mktemp("hostile") / "out")
    assert report_main([str(out)]) == 0
    return out, json.loads((out / "card" / "stats.json").read_text())


def hostile(stats: dict) -> tuple[dict, list[str]]:
    """``stats`` with a hostile value in every string field the card prints, and the tags of those shown verbatim
    (the config's ``cfgname`` and ``cfgent`` are shown as YAML)."""
    s = copy.deepcopy(stats)
    run = s["run"]
    run.update(
        name=evil("name"),
        started=evil("started"),
        finished=evil("finished"),
        status=evil("status"),
        parts_by=evil("partsby"),
        command=["curate", "run", evil("cmd")],
        phases_run=[evil("phrun")],
        versions={evil("pkg"): evil("ver"), "curate-pipeline": evil("curver")},
    )
    run["config"]["name"] = evil("cfgname")
    run["config"]["dedup"]["minhash"]["threshold"] = evil("mhthr")
    run["config"]["pii"]["entities"][evil("cfgent")] = "annotate"
    s["sources"]["per_file"][0]["file"] = evil("file")
    s["sources"]["snapshots"] = {evil("snap"): 1}
    s["sources"]["reader"]["by_type"][evil("rtype")] = 1
    removing = next(r for r in s["funnel"] if r["removed"] and r["status"] == "ran")
    removing.update(
        label=evil("label"), stage=evil("stage"), phase=evil("fphase"), by_reason={evil("reason"): removing["removed"]}
    )
    s["funnel"].append(
        {
            **removing,
            "status": "disabled",
            "label": evil("skipped"),
            "by_reason": {},
            "removed": 0,
            "in": removing["out"],
            "step": "x",
        }
    )
    last = list(s["languages"])[-1]
    s["languages"][last][evil("lang")] = 3
    s["phases"][evil("phase")] = {"status": "ran", "parts": 1, "kept": 1, "rejected": 0, "stages": [evil("pstage")]}
    s["length"]["before"]["phase"] = evil("lenphase")
    hist = [1] + [0] * 19
    s["classifiers"].update(
        present=True,
        entries=[
            {
                "name": evil("cname"),
                "column": evil("ccol"),
                "label": evil("clabel"),
                "model": evil("model"),
                "demonstration": evil("demo"),
                "model_sha256": "0" * 64,
                "threshold": evil("thr"),
                "remove": evil("cremove"),
                "top_fraction": None,
                "by_language_rule": {evil("crule"): 0.5},
                "filter_phase": evil("cphase"),
                "removed": 1,
                "removed_by_language": {evil("clang"): 1},
                "by_phase": {evil("cphase"): {"scored": 1, "missing": 0, "mean": 0.01, "hist": hist}},
                "by_language": {
                    evil("cphase"): {evil("clang"): {"scored": 1, "missing": 0, "mean": 0.01, "hist": hist}}
                },
            }
        ],
    )
    s["pii"]["phase"] = evil("piiphase")
    s["pii"]["entities"][evil("entity")] = {"documents": 1, "share": 0.5, "findings": 2, "action": evil("action")}
    s["tokens"]["formats"][evil("fmt")] = {"shards": 1, "samples": 1, "tokens": 1, "bytes": 1}
    s["tokens"].update(tokenizer={"path": evil("tok")}, config_hash=evil("hash"))
    s["hosts"]["kept"][0][0] = evil("host")
    s["hosts"]["removed"][0][0] = evil("rhost")
    s["checks"].append({"check": evil("check"), "ok": False})
    s["unreadable"] = [{"file": evil("ufile"), "error": evil("uerr")}]
    s["publish"] = {"configs": [], "withheld": evil("withheld")}
    s["plot_errors"] = {evil("plot") + ".svg": "ValueError"}
    source = {
        "documents": 3,
        "tokens": 30,
        "target_share": 1.0,
        "samples": 20,
        "tokens_drawn": 200,
        "share": 1.0,
        "epochs": 6.7,
    }
    s["mix"] = {
        "present": True,
        "mode": "weights",
        "seed": 0,
        "tokens": 200,
        "samples": 20,
        "documents_drawn": 3,
        "share_error": 0.0,
        "sources": {evil("mixsrc"): source},
        "rehydration": None,
        "repeat_warning_epochs": 4,
    }
    ex = s["examples"][0]
    ex.update(
        url=evil("url"), details=evil("details"), text=evil("text"), phase=evil("exphase"), reason=evil("exreason")
    )
    verbatim = [
        "name",
        "started",
        "finished",
        "status",
        "partsby",
        "phrun",
        "pkg",
        "ver",
        "curver",
        "file",
        "snap",
        "rtype",
        "label",
        "stage",
        "fphase",
        "reason",
        "skipped",
        "lang",
        "phase",
        "pstage",
        "lenphase",
        "model",
        "thr",
        "cname",
        "ccol",
        "clabel",
        "demo",
        "cremove",
        "crule",
        "cphase",
        "clang",
        "piiphase",
        "entity",
        "action",
        "fmt",
        "tok",
        "hash",
        "host",
        "rhost",
        "check",
        "ufile",
        "uerr",
        "withheld",
        "plot",
        "url",
        "details",
        "text",
        "exphase",
        "exreason",
        "mhthr",
        "mixsrc",
    ]
    return s, verbatim


def test_every_hostile_field_reaches_the_card_as_text(base):
    _, stats = base
    s, verbatim = hostile(stats)
    readme = render(s, s["examples"])
    meta, body = split_card(readme)
    # the front matter is one YAML document with our keys only; a hostile language label is not in it
    assert set(meta) == {
        "pretty_name",
        "language",
        "license",
        "license_name",
        "license_link",
        "size_categories",
        "source_datasets",
        "task_categories",
        "task_ids",
    }
    assert meta["pretty_name"] == f"{one_line(evil('name'))} (curated Common Crawl text)"
    assert all(isinstance(x, str) and x.isascii() and "<" not in x for x in meta["language"]) and meta["language"]
    page = rendered(body)
    assert_only_our_html(page, {f"{p}.svg" for p in plots.PLOTS})
    assert_tables_whole(body)
    # each value shows whole inside one element: no code span, table cell or HTML block was broken open
    missing = [t for t in verbatim if not any(shown(t) in x for x in page.texts)]
    assert missing == []
    assert one_line(shlex.join(s["run"]["command"])) in page.texts  # the command as a shell would take it
    # config values are in the YAML blocks, which no line of theirs can close
    loaded = [yaml.safe_load(b.split("\n", 1)[1].rsplit("\n", 1)[0]) for b in _fenced(body, "yaml")]
    full = next(c for c in loaded if isinstance(c, dict) and "dedup" in c)
    assert full["name"] == evil("cfgname") and evil("cfgent") in full["pii"]["entities"]
    assert any(f"pii.entities.{evil('cfgent')}" in c for c in loaded if isinstance(c, dict))
    assert "<script" not in md_html(body) and "onerror=" not in "".join(str(a) for _, a in page.tags)
    # the plots of the same stats: every one drawn, well-formed and inert, the hostile labels as text
    images, failed = plots.draw_all(s)
    assert failed == {} and len(images) == len(plots.PLOTS)
    for name, data in images.items():
        parse_svg(data)
        assert b"<script" not in data and b"<img" not in data, name
    assert shown("host")[:35] in "".join(texts(parse_svg(images["hosts.svg"])))


def _fenced(body: str, info: str) -> list[str]:
    """The fenced code blocks of ``body`` with ``info`` (found by markdown-it: fences of any length)."""
    lines = body.split("\n")
    return [
        "\n".join(lines[t.map[0] : t.map[1]])
        for t in MarkdownIt("commonmark").parse(body)
        if t.type == "fence" and t.info == info
    ]


def md_html(body: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(body)


@pytest.mark.parametrize(
    "value", ["`", "``", "` a `", " ", "a`b", "\\", "x|y", "<b>", "&lt;", "`|`", "a\\|b", "\n", "$$"]
)
def test_a_code_span_shows_exactly_its_string(value):
    page = rendered(f"| h |\n|---|\n| {cell(code(value))} |\n\nin text: {code(value)}\n")
    codes = [t for t in page.texts if t == one_line(value)]
    assert len(codes) >= 2 and [tag for tag, _ in page.tags].count("code") == 2, (value, page.texts)


@pytest.mark.parametrize(
    "value", ["1. item", "- x", "+ y", "# h", "> q", "= =", "***", "<img src=x>", "a_b_c", "2) z"]
)
def test_text_at_the_start_of_a_line_stays_text(value):
    page = rendered(f"- {text(value)}\n")
    assert [tag for tag, _ in page.tags] == ["ul", "li"] and page.texts[0] == value


def test_a_fence_is_not_closed_by_its_content():
    content = "a: 1\n```\n<script>alert(1)</script>\n  ````\nb: 2\n"
    html = md_html(fence(content, "yaml") + "\n\nafter\n")
    assert "&lt;script&gt;" in html and "<p>after</p>" in html and html.count("<pre>") == 1


def test_hostile_data_in_an_output_reaches_the_card_as_text(tmp_path):
    """End to end: hostile stage, reason, URL, details and language labels in the Parquet files, a hostile
    run name and input file name in run.json; `$\\foo$` hosts in the hosts plot."""
    out = make_output(tmp_path / "out")
    rej = out / "rejected" / "extracted" / "part-CC-MAIN-2024-10-a-00000000.parquet"
    t = pq.read_table(rej).to_pylist()
    for r in t[:3]:
        r.update(stage=evil("stage"), reason=evil("reason"), details=evil("details"))
    pq.write_table(pq.read_table(rej).from_pylist(t, schema=pq.read_schema(rej)), rej)
    final = out / "documents" / "final" / "part-CC-MAIN-2024-10-a-00000000.parquet"
    docs = pq.read_table(final).to_pylist()
    for i, d in enumerate(docs[:6]):
        d.update(language=evil("lang") if i % 2 else "$\\frac{a}{b", url=f"https://$\\foo$.example.com/{i}")
    pq.write_table(pq.read_table(final).from_pylist(docs, schema=pq.read_schema(final)), final)
    record = json.loads((out / "run.json").read_text())
    record["name"] = evil("name")
    record["inputs"][2] = "in/" + evil("file").replace("/", "")
    (out / "run.json").write_text(json.dumps(record))
    assert report_main([str(out)]) == 0
    card = json.loads((out / "card" / "stats.json").read_text())
    assert numbers(card) == numbers(expected(out, card))
    assert card["plot_errors"] == {} and "hosts.svg" in card["plots"] and "languages.svg" in card["plots"]
    hosts = texts(parse_svg((out / "card" / "hosts.svg").read_bytes()))
    assert "$\\foo$.example.com" in hosts
    parse_svg((out / "card" / "languages.svg").read_bytes())
    meta, body = split_card((out / "README.md").read_text())
    page = rendered(body)
    assert_only_our_html(page, set(card["plots"]))
    assert_tables_whole(body)
    assert evil("lang") not in meta["language"] and meta["pretty_name"].startswith(one_line(evil("name")))
    missing = [t for t in ("stage", "reason", "lang", "name") if not any(shown(t) in x for x in page.texts)]
    assert missing == []
    assert any("$\\foo$.example.com" in x for x in page.texts)


def test_data_strings_are_plain_text_in_the_plots(base):
    """A host `$\\foo$.example.com` made matplotlib's math parser raise, and the card with it: the SVG plots
    show such labels as they are."""
    _, stats = base
    s = copy.deepcopy(stats)
    mathy = ["$\\foo$.example.com", "a$b$c", "$\\frac{1}{", "\\\\$x", "tab\there\x00nul"]
    for i, v in enumerate(mathy):
        s["hosts"]["kept"][i][0] = v
        s["hosts"]["removed"][i][0] = v
    s["languages"] = {p: {**c, "$\\foo$": 2} for p, c in s["languages"].items()}
    s["funnel"][2]["label"] = "$\\alpha$ stage $\\"
    s["pii"]["entities"]["$\\FOO$"] = {**next(iter(s["pii"]["entities"].values()))}
    images, failed = plots.draw_all(s)
    assert failed == {} and set(images) == {f"{p}.svg" for p in plots.PLOTS if p != "mix"}  # mix.svg: with a mix only
    hosts = texts(parse_svg(images["hosts.svg"]))
    assert [
        h for h in ["$\\foo$.example.com", "a$b$c", "$\\frac{1}{", "\\\\$x", "tab here nul"] if h not in hosts
    ] == []
    assert "$\\alpha$ stage $\\" in texts(parse_svg(images["funnel.svg"]))


def test_a_plot_that_fails_costs_only_that_plot(base, tmp_path, monkeypatch):
    out, stats = base
    s = copy.deepcopy(stats)

    def broken(stats):
        raise RuntimeError("the plot broke")

    monkeypatch.setitem(plots.PLOTS, "hosts", broken)
    result = publish(Storage(str(tmp_path / "o")), s)
    assert result["plot_errors"] == ["hosts.svg"] and result["plots"] == len(plots.PLOTS) - 2  # and mix.svg: no mix
    card = tmp_path / "o" / "card"
    assert not (card / "hosts.svg").exists() and (card / "funnel.svg").exists() and not (card / "mix.svg").exists()
    readme = (tmp_path / "o" / "README.md").read_text()  # the card at the root, its plots in card/
    assert (
        "](card/hosts.svg)" not in readme
        and "](card/funnel.svg)" in readme
        and "The plot hosts.svg could not be drawn" in readme
    )
    assert json.loads((card / "stats.json").read_text())["plot_errors"] == {"hosts.svg": "RuntimeError"}
