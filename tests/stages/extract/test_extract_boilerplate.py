"""The boilerplate extractor: what it keeps on small pages, its parts, and
pages built to break it."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from stages.extract import ExtractConfig, ExtractStage, make_extractor
from stages.extract.blocks import extract_blocks
from stages.extract.boilerplate import BoilerplateConfig, BoilerplateExtractor
from stages.extract.cascade import CascadeExtractor
from stages.extract.classify import ClassifyConfig
from stages.extract.dom import ExtractionError, nesting_depth, parse
from stages.extract.hints import BOILERPLATE, CONTENT, name_hint

FIXTURES = Path(__file__).parents[2] / "fixtures" / "extract"
CASES = sorted(p.stem for p in FIXTURES.glob("*.html"))


@pytest.fixture(scope="module")
def extract():
    return BoilerplateExtractor()


# ---------------------------------------------------------------- whole pages


@pytest.mark.parametrize("case", CASES)
def test_fixture_keeps_exactly_the_main_text(extract, case):
    html = (FIXTURES / f"{case}.html").read_text(encoding="utf-8")
    expected = (FIXTURES / f"{case}.txt").read_text(encoding="utf-8").rstrip("\n")
    assert extract(html) == expected


def test_fixtures_cover_the_cases_the_issue_lists():
    assert set(CASES) >= {
        "navigation_footer",
        "cookie_share_comments",
        "table_list_br",
        "nested_articles",
        "no_main_content",
        "cjk_no_spaces",
    }


def test_is_the_default_extractor():
    assert ExtractConfig().extractor == "boilerplate"
    assert isinstance(make_extractor(ExtractConfig()), BoilerplateExtractor)


def test_a_line_repeated_on_the_page_is_kept_once(extract):
    p = "<p>Every line of this paragraph is long enough to count as good text on its own merits, twice over.</p>"
    assert extract(f"<html><body><article>{p}{p}</article></body></html>").splitlines() == [
        "Every line of this paragraph is long enough to count as good text on its own merits, twice over."
    ]


def test_a_line_that_is_only_a_web_address_is_dropped_but_in_code(extract):
    para = "This sentence is long enough to count as a good paragraph of the main text on its own."
    spec = "".join(
        f"<li>https://cdn.example.com/images/5001_TEE_{c}_THUMB.jpg</li><li>Colour {c}</li>" for c in ("BONE", "SAGE")
    )
    code = "<pre>curl https://api.example.com/v1/items\nhttps://api.example.com/v1/items</pre>"
    text = extract(
        f"<html><body><article><p>{para}</p><ul>{spec}</ul><p>{para} See www.example.org for more.</p>"
        f"<p>www.example.org/downloads</p>{code}<p>{para} End.</p></article></body></html>"
    )
    assert "Colour SAGE" in text and "See www.example.org for more." in text
    assert "THUMB.jpg" not in text and "www.example.org/downloads" not in text
    assert "\nhttps://api.example.com/v1/items\n" in text  # a line of code stays


def test_text_comes_out_in_composed_unicode(extract):
    # "Café" with a combining accent (NFD), as some pages write it: out in one form (NFC).
    decomposed = "Cafe\u0301 owners on the high street say trade has never been better than this spring."
    assert extract(f"<html><body><article><p>{decomposed}</p></article></body></html>") == (
        "Caf\u00e9 owners on the high street say trade has never been better than this spring."
    )


def test_a_long_heading_is_judged_as_a_paragraph(extract):
    # A subtitle in heading tags, followed by a link line: as a heading it
    # would be kept only if the text right after it were.
    dek = (
        "During an operation to catch three suspected motorbike thieves, the police "
        "found the stolen bikes in a garage near the old market."
    )
    html = (
        "<html><body><article><h1>Three arrested</h1>"
        f"<h2>{dek}</h2><h3><a href='/x'>SEE ALSO: the mayor's plan for the market</a></h3>"
        "<p>The three men were taken to the station in the centre of town and questioned overnight by detectives.</p>"
        "</article></body></html>"
    )
    assert dek in extract(html).splitlines()


def test_link_lists_between_paragraphs_are_dropped(extract):
    p1 = "<p>The first paragraph of the story is long enough to be good text, with no links at all in it.</p>"
    links = "<p><a href='/1'>Read more about this</a> <a href='/2'>and about that</a></p>"
    p2 = "<p>The second paragraph of the story is just as long, so the link line sits between good text.</p>"
    assert extract(f"<html><body>{p1}{links}{p2}</body></html>").splitlines() == [
        "The first paragraph of the story is long enough to be good text, with no links at all in it.",
        "The second paragraph of the story is just as long, so the link line sits between good text.",
    ]


def test_figure_captions_are_dropped_unless_asked_for():
    p1 = "<p>The first paragraph of the story is long enough to be good text, with no links at all in it.</p>"
    fig = "<figure><img src='x.jpg'><figcaption>Photo: Jane Doe / Agency</figcaption></figure>"
    p2 = "<p>The second paragraph of the story is just as long, and the photo sits between the two of them.</p>"
    html = f"<html><body><article>{p1}{fig}{p2}</article></body></html>"
    assert "Photo: Jane Doe / Agency" not in BoilerplateExtractor()(html).splitlines()
    keep = BoilerplateExtractor(BoilerplateConfig(blocks=ClassifyConfig(keep_captions=True)))
    assert keep(html).splitlines()[1] == "Photo: Jane Doe / Agency"


def test_a_caption_is_a_caption_also_when_its_text_is_in_a_paragraph(extract):
    p1 = "<p>The first paragraph of the story is long enough to be good text, with no links at all in it.</p>"
    fig = (
        "<figure><img src='x.jpg'><figcaption><p>The new terminal seen from the harbour wall at dawn. "
        "Photo: Jane Doe / Agency</p></figcaption></figure>"
    )
    p2 = "<p>The second paragraph of the story is just as long, and the photo sits between the two of them.</p>"
    text = extract(f"<html><body><article>{p1}{fig}{p2}</article></body></html>")
    assert "Photo" not in text and len(text.splitlines()) == 2


def test_an_author_box_in_the_article_is_dropped(extract):
    paras = "".join(
        f"<p>Paragraph {i} of the article body, long enough to count as good text on its own.</p>" for i in range(4)
    )
    bio = (
        '<div class="article_author"><p>Jane Doe has covered shipping and ports for the paper since 2009 '
        "and writes a weekly column on logistics.</p></div>"
    )
    text = extract(f"<html><body><article><div class='entry-content'>{paras}{bio}</div></article></body></html>")
    assert "Jane Doe" not in text and len(text.splitlines()) == 4


def test_the_lead_before_the_body_is_kept_past_a_photo_and_a_byline(extract):
    lead = "The harbour authority will raise its fees by eight per cent from July, the first rise in a decade."
    body = "".join(
        f"<p>Paragraph {i} of the article body, long enough to count as good text on its own.</p>" for i in range(4)
    )
    html = (
        "<html><body><main><p class='promo'>Subscribe today and "
        "read every story on every device you own, for a year.</p>"
        f"<article><h1>Port fees rise</h1><p class='intro'>{lead}</p>"
        "<figure><img src='x.jpg'><figcaption>The harbour at dawn</figcaption></figure>"
        "<p class='byline'>By Jane Doe, shipping correspondent</p>"
        f"<div class='article-body'>{body}</div></article></main></body></html>"
    )
    lines = extract(html).splitlines()
    assert lines[0] == lead and len(lines) == 5
    # Outside the article around the body, a paragraph before it is not a lead.
    assert not any(line.startswith("Subscribe") for line in lines)


# ---------------------------------------------------------------- parts


def blocks_of(html: str):
    return extract_blocks(parse(html).body)


def test_blocks_one_line_per_block_with_link_chars():
    got = [
        (b.text, b.chars, b.link_chars, b.kind)
        for b in blocks_of(
            "<body><h2>Title</h2><p>Some <a href='x'>linked words</a> "
            "here</p><ul><li>one</li><li>two <b>bold</b></li></ul></body>"
        )
    ]
    assert got == [
        ("Title", 5, 0, "h"),
        ("Some linked words here", 19, 11, "p"),
        ("one", 3, 0, "li"),
        ("two bold", 7, 0, "li"),
    ]


def test_br_lines_share_their_paragraphs_group_and_table_rows_are_lines():
    blocks = blocks_of(
        "<body><p>a b<br>c<br><br>d</p><table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table></body>"
    )
    assert [b.text for b in blocks] == ["a b", "c", "d", "1\t2", "3"]  # a row's cells apart by tabs
    assert len({b.group for b in blocks[:3]}) == 1
    assert len({b.group for b in blocks[3:]}) == 2


def test_ruby_readings_are_not_read_into_the_text():
    (b,) = blocks_of("<body><p><ruby>法律<rp>(</rp><rt>ほうりつ</rt><rp>)</rp></ruby>ができました</p></body>")
    assert b.text == "法律ができました"


def test_pre_keeps_its_lines_and_their_indentation():
    assert [b.text for b in blocks_of("<body><pre>x = 1\n  y = 2\n</pre></body>")] == ["x = 1", "  y = 2"]


def test_char_counts_do_not_assume_spaces_and_weigh_wide_scripts():
    (b,) = blocks_of("<body><p>春天的雨 总是来得很轻</p></body>")
    assert (b.chars, b.text) == (20, "春天的雨 总是来得很轻")  # 10 Han characters, 2 each
    (b,) = blocks_of("<body><p>Ein Satz, <a href='/x'>verlinkt</a>.</p></body>")
    assert (b.chars, b.link_chars) == (17, 8)  # spaces do not count


@pytest.mark.parametrize(
    "name, hint",
    [
        ("site-footer ", BOILERPLATE),
        ("comments-area comments", BOILERPLATE),
        ("jp-relatedposts ", BOILERPLATE),
        ("cookie-notice ", BOILERPLATE),
        ("article_author ", BOILERPLATE),  # an author box
        ("author-bio ", BOILERPLATE),
        ("entry-tags ", BOILERPLATE),
        ("tagstyle_z4kqwb ", 0),  # "tags" is a whole word
        ("vc_cta3-container ", BOILERPLATE),  # call to action
        ("borlabscookie ", BOILERPLATE),  # consent banners: "cookie" anywhere
        ("wp-caption aligncenter", BOILERPLATE),  # captions, dropped by default
        (" mainnav", 0),  # "nav" must start a word
        ("hidden ", BOILERPLATE),
        ("hidden-xs ", 0),
        ("field--label-hidden ", 0),
        ("canvas ", 0),
        ("commentary ", 0),
        ("text-center ", 0),
        ("entry-content ", CONTENT),
        ("article-content sticky-sidebar", CONTENT),
        ("content ", CONTENT),
        (" main", CONTENT),
    ],
)
def test_name_hints(name, hint):
    assert name_hint(name) == hint


def test_caption_names_are_boilerplate_only_when_captions_are_dropped():
    assert name_hint("wp-caption-text ", drop_captions=False) == 0
    p1 = "<p>The first paragraph of the story is long enough to be good text, with no links at all in it.</p>"
    cap = (
        "<div class='wp-caption'><img src='x.jpg'><p class='wp-caption-text'>The "
        "harbour at dawn, seen from the old pier.</p></div>"
    )
    p2 = "<p>The second paragraph of the story is just as long, and the photo sits between the two of them.</p>"
    html = f"<html><body><article>{p1}{cap}{p2}</article></body></html>"
    assert "harbour" not in BoilerplateExtractor()(html)
    keep = BoilerplateExtractor(BoilerplateConfig(blocks=ClassifyConfig(keep_captions=True)))
    assert keep(html).splitlines()[1] == "The harbour at dawn, seen from the old pier."


def test_nesting_depth_ignores_void_and_auto_closed_elements():
    assert nesting_depth("<div><p>a<p>b<br><img src=x><div><span>c</span></div></div>") == 3


# ---------------------------------------------------------------- pages built to break it


def test_a_20_mb_page(extract):
    para = "<p>Paragraph {} of a very long page, long enough to be good text when it stands on its own.</p>"
    html = "<html><body><article>" + "".join(para.format(i) for i in range(210_000)) + "</article></body></html>"
    assert len(html) > 20_000_000
    lines = extract(html).splitlines()
    assert len(lines) == 210_000
    assert (
        lines[123_456]
        == "Paragraph 123456 of a very long page, long enough to be good text when it stands on its own."
    )


def test_100k_nested_tags_are_refused_not_parsed(extract):
    html = "<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000 + "</body></html>"
    with pytest.raises(ExtractionError, match="nested deeper than 2000"):
        extract(html)


def test_the_resiliparse_option_refuses_deep_nesting_too():
    # resiliparse parses 100k nested elements fast, but its main_content pass then hangs.
    resiliparse = make_extractor(ExtractConfig(extractor="resiliparse"))
    with pytest.raises(ExtractionError):
        resiliparse("<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000 + "</body></html>")
    assert resiliparse("<html><body><p>Some text.</p></body></html>") == "Some text."


def test_nesting_below_the_limit_is_walked_without_recursion(extract):
    text = "Deep inside many elements there is a paragraph long enough to count as good text on its own."
    html = "<html><body>" + "<div>" * 1500 + f"<p>{text}</p>" + "</div>" * 1500 + "</body></html>"
    assert extract(html) == text


def test_many_short_lines_stay_linear(extract):
    # Context rules look for the nearest good paragraph: once per page, not once per line.
    html = "<html><body>" + "<p>ab</p>" * 50_000 + "</body></html>"
    assert extract(html) == ""


def test_many_paragraphs_inside_deeply_nested_marks(extract):
    para = "<p>Paragraph {} inside a deep stack of content containers, long enough to be good text.</p>"
    html = (
        "<html><body>"
        + "<div class='content'>" * 1500
        + "".join(map(para.format, range(20_000)))
        + "</div>" * 1500
        + "</body></html>"
    )
    lines = extract(html).splitlines()
    assert (len(lines), lines[-1]) == (20_000, para.format(19_999)[3:-4])


def test_binary_garbage_labelled_html_gives_a_string(extract):
    rng = random.Random(7)
    garbage = bytes(rng.randrange(256) for _ in range(210_000)).decode("latin-1")
    assert isinstance(extract(garbage), str)


@pytest.mark.parametrize("html", ["", "<html></html>", "<html><body></body></html>", "   ", "<!-- only a comment -->"])
def test_empty_pages_give_empty_text(extract, html):
    assert extract(html) == ""


def test_stage_counts_refused_and_empty_pages():
    stage = ExtractStage(ExtractConfig())
    good = (
        "<html><body><p>"
        + "A sentence that is long enough to be kept on its own as main text. " * 2
        + "</p></body></html>"
    )
    deep = "<html><body>" + "<div>" * 30_000 + "x" + "</div>" * 30_000 + "</body></html>"
    batch = pa.table({"id": ["a", "b", "c", "d"], "html": [good, deep, "<html><body></body></html>", None]})
    out = stage(batch)
    assert out.column("reason").to_pylist() == [None, "extract_error", "no_text", "no_text"]
    assert out.column("text").to_pylist()[0].startswith("A sentence that is long enough")
    assert "nested deeper than 2000" in out.column("details").to_pylist()[1]


def _sample_pages(limit: int = 120) -> list[tuple[str, str]]:
    """(html, url) of the first HTML responses of samples/ (real pages, many not ASCII)."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    out = []
    for path in sorted((Path(__file__).parents[3] / "samples").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, record_types=WarcRecordType.response):
                body = rec.reader.read()  # fastwarc has read the HTTP headers
                if b"<html" in body[:4000].lower():
                    out.append((body.decode("utf-8", "replace"), rec.headers.get("WARC-Target-URI")))
                if len(out) == limit:
                    return out
    return out


def test_the_stage_hands_the_extractor_utf8_bytes_and_the_text_is_the_same(extract):
    """The pages reach lexbor as the batch's UTF-8 bytes, not as a str decoded for it and encoded again:
    the same text as from the str, page by page, and the same isolation and cut decisions."""
    pages = _sample_pages()
    assert len(pages) >= 50 and sum(not h.isascii() for h, _ in pages) >= 10
    stage = ExtractStage(ExtractConfig(isolate_tags=None))
    assert stage.takes_bytes
    seen = []
    real = stage.extract
    stage.extract = lambda html, url=None: (seen.append(type(html)), real(html, url))[1]
    out = stage(pa.table({"html": [h for h, _ in pages], "url": [u for _, u in pages]}))
    assert set(seen) == {bytes}
    assert out.column("text").to_pylist() == [(extract(h, u).strip() or None) for h, u in pages]


def test_bytes_are_cut_where_their_text_would_be():
    from stages.extract import _cut

    text = "é" * 10  # 20 bytes
    assert _cut(text.encode(), 15) == text.encode()  # more bytes than the limit, but 10 characters
    assert _cut(text.encode(), 4) == ("é" * 4).encode() and _cut(text, 4) == "é" * 4
    assert _cut(b"<p>x</p>", 100) == b"<p>x</p>"


def test_the_isolation_counts_tags_alike_in_text_and_bytes():
    from stages.extract.dom import tag_count

    for copies in (100, 1000):  # under and over the size where bytes are counted with numpy
        page = "<p>ü<b>日本</b></p>" * copies
        assert tag_count(page) == tag_count(page.encode()) == 4 * copies


# ---------------------------------------------------------------- cascade


def test_cascade_sends_only_unsure_pages_to_the_slow_path():
    cascade = CascadeExtractor()
    cascade.slow = lambda html: "from the slow path"
    para = "<p>Paragraph {} of an article that is long enough for the fast path to be sure of it on its own.</p>"
    article = (
        "<html><body><nav><a href='/'>Home</a></nav><article>"
        + "".join(map(para.format, range(5)))
        + "</article></body></html>"
    )
    assert cascade(article).startswith("Paragraph 0 of an article")
    assert cascade("<html><body><p>Only a short line.</p></body></html>") == "from the slow path"
    assert dict(cascade.stats) == {"fast": 1, "slow": 1}
    assert cascade.slow_fraction == 0.5


def test_cascade_keeps_the_fast_answer_when_the_slow_path_finds_nothing():
    cascade = CascadeExtractor()
    cascade.slow = lambda html: ""
    assert cascade("<html><body><p>Only a short line.</p></body></html>") == ""
    assert cascade.stats["slow_empty"] == 1


def test_footer_is_not_taken_for_content_on_a_table_of_contents_page():
    # A documentation index page: the content is all links, and the footer's
    # licence sentences are the only long, link-poor text on the page.
    toc = "".join(f'<li><a href="m{i}.html">module{i} - does thing number {i}</a></li>' for i in range(12))
    html = (
        '<html><body><div class="document"><div class="body" role="main"><h1>The package</h1>'
        f"<ul>{toc}</ul></div></div>"
        '<div class="footer">&copy; Copyright 2001-2026, Python Software Foundation.<br/>'
        "This page is licensed under the Python Software Foundation License Version 2.<br/>"
        "Examples, recipes, and other code in the documentation are "
        "additionally licensed under the Zero Clause BSD License.<br/>"
        "</div></body></html>"
    )
    text = BoilerplateExtractor()(html)
    assert "Copyright" not in text and "licensed" not in text
