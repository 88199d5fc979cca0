"""Extraction beyond articles (issue 24): what the boilerplate extractor keeps and drops
on forum threads, Q&A pages, product pages, listings and documentation, how it tells
them apart, and the rules each kind of page changes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from selectolax.lexbor import LexborHTMLParser

from stages.extract import ExtractConfig, ExtractStage, pagetype as pt
from stages.extract.boilerplate import BoilerplateConfig, BoilerplateExtractor
from stages.extract.dom import parse

FIXTURES = Path(__file__).parents[2] / "fixtures" / "extract" / "page_types"
PROSE = "This sentence is long enough to count as a good paragraph of the main text on its own."


@pytest.fixture(scope="module")
def extract():
    return BoilerplateExtractor()


def page(name: str) -> str:
    return (FIXTURES / f"{name}.html").read_text(encoding="utf-8")


def lines(text: str) -> list[str]:
    return text.splitlines()


# ---------------------------------------------------------------- whole pages, per kind


def test_forum_thread_keeps_every_post(extract):
    result = extract.run(page("forum_thread"), "https://forums.example.net/topic/4821-best-first-telescope/")
    assert result.page_type == pt.FORUM
    for post in (
        "I have been reading about telescopes",
        "For that budget an eight inch Dobsonian",
        "I started with a small refractor",
        "Thank you all. I ordered",
    ):
        assert post in result.text  # the first post and every reply, though all are named "comment"
    for furniture in ("Online users", "Quote", "Report post", "Similar topics", "Which eyepieces", "Copyright 2024"):
        assert furniture not in result.text


def test_forum_posts_are_comments_under_an_article(extract):
    # The same posts, under an article that holds more text than they do: readers' comments, dropped.
    body = "".join(f"<p>{PROSE} Paragraph {i} of the article.</p>" for i in range(8))
    html = page("forum_thread").replace(
        '<main id="ipsLayout_mainArea">', f'<main id="ipsLayout_mainArea"><article>{body}</article>'
    )
    text = extract(html, "https://news.example.net/2024/03/telescopes-for-beginners")
    assert "Paragraph 7 of the article." in text
    assert "For that budget an eight inch Dobsonian" not in text


def test_qa_page_keeps_question_and_answers_not_their_comments(extract):
    result = extract.run(page("qa_page"), "https://qa.example.com/questions/123/how-do-i-undo-the-last-git-commit")
    assert result.page_type == pt.QA
    text = result.text
    assert "How do I undo the last git commit without losing my changes?" in lines(text)
    assert "I committed a few files too early" in text  # the question
    assert "Use a soft reset" in text and "git reset --soft HEAD~1" in lines(text)  # the accepted answer, its code
    assert "If you also want the changes unstaged" in text  # the other answer
    # short comments under each post, the related-questions sidebar, the navigation: dropped
    for dropped in (
        "Did you already push",
        "This worked perfectly",
        "What is the difference between reset",
        "Log in",
        "Tags",
        "Site design and logo",
    ):
        assert dropped not in text


def test_product_page_keeps_description_and_spec_table_not_reviews(extract):
    result = extract.run(page("product_page"), "https://shop.example.com/products/trail-25-daypack")
    assert result.page_type == pt.PRODUCT
    text = result.text
    assert "The Trail 25 is a light daypack" in text and "Its side pockets take" in text
    assert ["Weight\t1.1 kg", "Volume\t25 litres", "Fabric\tRecycled nylon", "Back length\t45 cm"] == [
        line for line in lines(text) if "\t" in line
    ]  # the specification table, a row a line, its cells apart
    for dropped in (
        "Great little pack",
        "bottle pockets are a bit tight",
        "You may also like",
        "Trail 40 Backpack",
        "Free shipping",
        "Camping",
    ):
        assert dropped not in text


def test_forum_replies_are_content_even_when_the_first_post_is_longer(extract):
    # Vanilla: the opening post outside any comment element, shorter replies in "comment" items.
    opening = "".join(f"<p>{PROSE} Opening post, part {i}.</p>" for i in range(6))
    replies = "".join(f"<li class='comment'><p>{PROSE} Reply {i}.</p></li>" for i in range(2))
    html = f"<html><body><div class='discussion'>{opening}</div><ul class='comments'>{replies}</ul></body></html>"
    text = extract(html, "https://forum.example.org/discussion/39620/closing-down")
    assert "Opening post, part 5." in text and "Reply 1." in text


def test_posts_wrapped_in_forms_are_content_on_a_forum_only(extract):
    # Old Reddit wraps each comment's text in <form class="usertext">; elsewhere a form is a login or search box.
    posts = "".join(
        f"<div class='thing comment'><form class='usertext'><p>{PROSE} Comment {i}.</p></form></div>" for i in range(4)
    )
    html = (
        f"<html><body><div class='commentarea'>{posts}</div><form "
        f"class='login'><p>{PROSE} Log in.</p></form></body></html>"
    )
    text = extract(html, "https://old.reddit.example/r/science/comments/1x/hair/")
    assert "Comment 3." in text and "Log in." not in text  # a form named like furniture stays out
    article = f"<html><body><article><p>{PROSE} Body.</p><p>{PROSE} Body again.</p></article>{posts}</body></html>"
    assert "Comment 3." not in extract(article, "https://news.example/2024/hair")


def test_reviews_are_content_on_a_review_article(extract):
    review = "".join(f"<p class='review-text'>{PROSE} Point {i} of the review.</p>" for i in range(5))
    html = f"<html><body><article><div class='review-body'>{review}</div></article></body></html>"
    assert "Point 4 of the review." in extract(html, "https://blog.example.com/2024/trail-25-review")


def test_listing_keeps_its_item_titles_and_teasers(extract):
    result = extract.run(page("listing_page"), "https://news.example.com/science")
    assert result.page_type == pt.LISTING
    text = result.text
    for item in (
        "Astronomers map the coldest clouds in the galaxy",
        "A new radio survey charts the gas from which the next generation of stars will form.",
        "How octopuses change colour without seeing it",
        "Light sensitive proteins in the skin may let the animals sense their surroundings.",
    ):
        assert item in lines(text)  # each card is one link around a title and a teaser
    for furniture in ("World", "Sport", "Next page", "funded by its readers"):
        assert furniture not in text


def test_documentation_keeps_code_with_its_indentation_and_tables(extract):
    result = extract.run(page("documentation_page"), "https://exampleclient.readthedocs.io/en/2.1/retries/")
    assert result.page_type == pt.DOCUMENTATION
    got = lines(result.text)
    code = [
        "try:",
        '    client.get("/items")',
        "except TimeoutError:",
        "    pass",
        "try:",
        '    client.get("/users")',
        "except TimeoutError:",
        "    pass",
    ]
    start = got.index("try:")
    assert got[start : start + 8] == code  # repeated code lines are kept, indented
    assert ["Parameter\tDefault\tMeaning", "total\t3\tattempts in all"] == got[
        got.index("The parameters of Retry:") + 1 :
    ][:2]
    assert "A request is never retried after its body was sent" in result.text
    for furniture in ("Table of contents", "Installation", "Timeouts", "Created using Sphinx"):
        assert furniture not in result.text


def test_the_kind_can_be_switched_off(extract):
    plain = BoilerplateExtractor(BoilerplateConfig(page_types=False))
    result = plain.run(page("forum_thread"), "https://forums.example.net/topic/4821-best-first-telescope/")
    assert result.page_type == pt.ARTICLE
    assert "For that budget an eight inch Dobsonian" not in result.text  # posts named "comment" dropped again


def test_the_stage_passes_each_pages_url(tmp_path):
    # No signal in the page itself but its URL: the stage hands the url column to the extractor.
    posts = "".join(f"<div class='comment'><p>{PROSE} Reply {i}.</p></div>" for i in range(4))
    html = f"<html><body><div class='comments'>{posts}</div></body></html>"
    stage = ExtractStage(ExtractConfig())
    batch = pa.table(
        {
            "id": ["a", "b"],
            "url": ["https://example.org/threads/hello.1/", "https://example.org/2024/hello"],
            "html": [html, html],
        }
    )
    out = stage(batch)
    texts = out.column("text").to_pylist()
    assert "Reply 3." in texts[0]  # a thread: the replies are its content
    assert texts[1] is None  # the same markup on an article's URL: comments only, no main text


# ---------------------------------------------------------------- telling the kinds apart


def signals(head: str = "", body: str = "", url: str | None = None) -> pt.Signals:
    return pt.read_signals(LexborHTMLParser(f"<html><head>{head}</head><body>{body}</body></html>"), url)


def test_signals_read_from_the_page():
    s = signals(
        '<meta property="og:type" content="Product"><meta name="generator" content="Discourse 3.2">'
        '<link rel="canonical" href="https://Shop.Example.com/products/x?colour=red">'
        '<script type="application/ld+json">{"@type": ["Product"], "offers": {"@type": "Offer"}}</script>',
        '<div itemscope itemtype="https://schema.org/BreadcrumbList"></div>'
        '<button aria-controls="faq-1 faq-2">Open</button><link aria-controls="x" href="/not-canonical">',
    )
    assert s.og_type == "product" and s.generator.startswith("discourse")
    assert (s.host, s.path) == ("shop.example.com", "/products/x?colour=red")
    assert s.types == frozenset({"Product", "Offer", "BreadcrumbList"})
    assert s.controlled == frozenset({"faq-1", "faq-2", "x"})  # the panels the page's buttons open, same pass
    assert signals(url="https://a.example/t/x/1").path == "/t/x/1"  # the fetch URL wins over none


def test_tracking_parameters_do_not_change_the_page():
    # Campaign tags and click ids say where a visitor came from: a shop's home page with them is its home page.
    home = signals(url="https://Shop.Example/?srsltid=AfmBOoq2x&utm_source=news")
    assert home.path == "/" and pt.classify(home, shape(good=0.5)) == pt.SERVICE
    assert signals(url="https://shop.example/search?q=socks&gclid=abc&utm_medium=cpc").path == "/search?q=socks"
    assert signals(url="https://shop.example/?page=2").path == "/?page=2"  # a real parameter stays


def shape(good: float = 0.0, link: float = 0.0, headlines: int = 0, prices: int = 0, code: float = 0.0) -> pt.Shape:
    return pt.Shape(10_000, good, link, headlines, prices, code)


@pytest.mark.parametrize(
    "sig, sh, kind",
    [
        (pt.Signals(path="/forums/topic/123-hello/"), shape(), pt.FORUM),
        (pt.Signals(types=frozenset({"QAPage"})), shape(good=0.9), pt.QA),
        (pt.Signals(host="q.example", path="/questions/42/why"), shape(), pt.QA),
        (pt.Signals(generator="vbulletin 5"), shape(), pt.FORUM),
        (pt.Signals(og_type="article"), shape(good=0.8, code=0.3), pt.ARTICLE),  # says article, reads like one
        (pt.Signals(og_type="article", path="/docs/intro"), shape(good=0.1), pt.DOCUMENTATION),
        (pt.Signals(generator="sphinx 7"), shape(good=0.5), pt.DOCUMENTATION),
        (pt.Signals(), shape(good=0.4, code=0.3), pt.DOCUMENTATION),
        (pt.Signals(og_type="product", path="/products/pack"), shape(), pt.PRODUCT),
        (pt.Signals(types=frozenset({"Product"})), shape(prices=20), pt.COLLECTION),  # a grid of prices
        (pt.Signals(og_type="product.group"), shape(), pt.COLLECTION),
        # one product at a product's address, with a grid of related products' prices, under a shop section
        (pt.Signals(types=frozenset({"Product"}), path="/shop/p/white-mug"), shape(prices=14), pt.PRODUCT),
        (
            pt.Signals(types=frozenset({"Product", "CollectionPage"}), path="/shop/p/white-mug"),
            shape(prices=14),
            pt.COLLECTION,
        ),
        (pt.Signals(host="shop.example", path="/collections/socks"), shape(), pt.COLLECTION),
        (pt.Signals(), shape(good=0.1, headlines=12), pt.LISTING),
        (pt.Signals(path="/hub/science"), shape(good=0.6, headlines=12), pt.LISTING),  # a section's front page
        (pt.Signals(path="/2024/05/the-storm-that-came"), shape(good=0.6, headlines=12), pt.ARTICLE),  # a story
        (pt.Signals(path="/hub/science"), shape(good=0.6, headlines=3), pt.ARTICLE),
        (pt.Signals(host="saas.example", path="/"), shape(good=0.5), pt.SERVICE),
        (pt.Signals(path="/services/cloud-migration"), shape(good=0.5), pt.SERVICE),
        (pt.Signals(), shape(good=0.5), pt.ARTICLE),  # nothing telling: an article
        (pt.Signals(path=""), shape(good=0.5), pt.ARTICLE),  # no URL at all is not a home page
    ],
)
def test_page_kinds(sig, sh, kind):
    assert pt.classify(sig, sh) == kind


def test_shape_counts_text_outside_boilerplate():
    tree = parse(
        "<html><body><nav><a href='/'>" + "menu " * 50 + "</a></nav>"
        f"<p>{PROSE}</p><p><a href='/a'>A headline long enough to be an item title</a></p><p>Price: $19.99</p>"
        "<pre>x = 1</pre></body></html>"
    )
    from stages.extract import hints
    from stages.extract.blocks import extract_blocks

    body = tree.body
    sh = pt.shape(extract_blocks(body, hints.scan(body)))
    assert sh.headlines == 1 and sh.prices == 1
    seen = (PROSE, "A headline long enough to be an item title", "Price: $19.99", "x = 1")
    assert sh.chars == sum(len(t.replace(" ", "")) for t in seen)  # the menu is not counted
    assert 0 < sh.code_share < sh.link_share < sh.good_share


# ---------------------------------------------------------------- rules that changed for them


def test_a_noscript_holding_the_page_is_read(extract):
    # Script-built forums serve crawlers the thread inside <noscript>; a tracking pixel's noscript stays out.
    posts = "".join(f"<p>{PROSE} Post {i}.</p>" for i in range(6))
    html = (
        f"<html><body><noscript><img src='pixel.gif'>Please enable JavaScript</noscript>"
        f"<div id='app'>Loading...</div><noscript><div class='posts'>{posts}</div></noscript></body></html>"
    )
    text = extract(html)
    assert "Post 5." in text and "enable JavaScript" not in text


def test_hidden_tabs_and_accordions_are_content_but_hidden_popups_are_not(extract):
    body = "".join(f"<p>{PROSE} Visible {i}.</p>" for i in range(3))
    tab = f"<div role='tabpanel' hidden><p>{PROSE} In a closed tab.</p></div>"
    faq = f"<div class='faq-answer' style='display:none'><p>{PROSE} In a closed FAQ answer.</p></div>"
    popup = f"<div style='display: none'><p>{PROSE} In a hidden popup.</p></div>"
    wide = f"<div class='hidden lg:block'><p>{PROSE} Shown on wide screens.</p></div>"
    text = extract(f"<html><body><article>{body}{tab}{faq}{popup}{wide}</article></body></html>")
    assert "In a closed tab." in text and "In a closed FAQ answer." in text and "Shown on wide screens." in text
    assert "In a hidden popup." not in text


def test_hidden_panels_a_button_opens_and_streamed_segments_are_content(extract):
    # A hidden element whose id a button names in aria-controls is a collapsed panel (a disclosure, an
    # accordion with no telling class); React's streaming rendering sends late parts as <div hidden id="S:n">
    # that a script moves into place.  Any other hidden element (a popup) stays out, on an article too.
    body = "".join(f"<p>{PROSE} Visible {i}.</p>" for i in range(3))
    panel = (
        f"<button aria-expanded='false' aria-controls='item-1-content'>Step one</button>"
        f"<div id='item-1-content' class='x9' hidden><p>{PROSE} In a collapsed panel.</p></div>"
    )
    streamed = f"<div hidden id='S:1f'><p>{PROSE} Streamed in by React.</p></div>"
    popup = f"<div id='item-2-content' style='display:none'><p>{PROSE} In a hidden popup.</p></div>"
    text = extract(f"<html><body><article>{body}{panel}{popup}{streamed}</article></body></html>")
    assert "In a collapsed panel." in text and "Streamed in by React." in text
    assert "In a hidden popup." not in text
    # Without the button, the same panel is a hidden element like any other.
    text = extract(f"<html><body><article>{body}{panel.split('</button>')[1]}</article></body></html>")
    assert "In a collapsed panel." not in text


def test_a_sections_anchor_made_of_its_heading_is_no_comment_list(extract):
    # Documentation names each section after its heading: "reply" in that id is a verb, not a comment list.
    section = (
        f"<section id='receive-and-reply-to-an-inbound-message'><h2>Receive and reply to an inbound message</h2>"
        f"<p>{PROSE} How to reply.</p></section>"
    )
    comments = f"<section id='comments-list'><p>{PROSE} A reader's comment.</p></section>"
    body = "".join(f"<p>{PROSE} Intro {i}.</p>" for i in range(3))
    text = extract(
        f"<html><body><main>{body}{section}{comments}</main></body></html>", "https://docs.example.com/guide/sms"
    )
    assert "How to reply." in text and "A reader's comment." not in text


def test_the_shape_of_a_page_wrapped_in_one_form_is_read_past_the_wrapper(extract):
    # ASP.NET wraps the whole body in a <form>: as the walk finds the marks, no text is outside them, and the
    # page's shape would say nothing (no paragraphs) -- an article at a news address ending in an id would be
    # taken for a product page.  Its shape is read with the wrapper's mark forgotten, as the selection sees it.
    body = "".join(f"<p>{PROSE} Paragraph {i}.</p>" for i in range(6))
    html = (
        f"<html><head><meta property='og:type' content='article'></head><body>"
        f"<form id='aspnetForm' action='/news/x'><div class='story'>{body}</div></form></body></html>"
    )
    result = extract.run(html, "https://news.example.de/news/apple-eigener-iphone-akku-1587177/")
    assert result.page_type == pt.ARTICLE and "Paragraph 5." in result.text
    from stages.extract import dom, hints
    from stages.extract.blocks import extract_blocks
    from stages.extract.boilerplate import page_shape

    page = dom.parse(html).body
    marks = hints.scan(page)
    blocks = extract_blocks(page, marks)
    assert pt.shape(blocks).chars == 0 and page_shape(blocks, marks, BoilerplateConfig()).good_share == 1.0
    assert [b.skip for b in blocks] == [0] * 6  # the marks are put back


def test_a_threads_root_holds_nearly_all_its_posts(extract):
    # One long post holds 75% of the thread's good text: under an article's rules (70%) it would be the
    # content root alone, and the other posts would be lost.
    long_post = "<div class='post'>" + "".join(f"<p>{PROSE} Long post, part {i}.</p>" for i in range(9)) + "</div>"
    replies = "".join(f"<div class='post'><p>{PROSE} Reply {i}.</p></div>" for i in range(3))
    html = f"<html><body><div class='thread'><article>{long_post}</article>{replies}</div></body></html>"
    text = extract(html, "https://forum.example.org/threads/telescopes.42/")
    assert "Long post, part 8." in text and "Reply 2." in text
    assert "Reply 2." not in extract(html, "https://news.example.org/2024/05/telescopes-for-beginners")


def test_a_service_pages_banners_and_calls_to_action_are_its_content(extract):
    # On a service page the hero (named "banner"), promotions and calls to action are what it says.
    hero = (
        "<div class='hero-banner'><h1>Cloud migration</h1><p>We move "
        "your workloads to the cloud in weeks, not months.</p></div>"
    )
    features = "".join(
        f"<section class='feature'><h2>Feature {i}</h2><p>{PROSE} Feature {i}.</p></section>" for i in range(3)
    )
    cta = (
        "<div class='cta-section'><p>Talk to an engineer about your migration plan and get a quote in a day.</p></div>"
    )
    footer = "<footer><p>Copyright 2024 Example Cloud Incorporated, all rights reserved worldwide.</p></footer>"
    html = f"<html><body><main>{hero}{features}{cta}</main>{footer}</body></html>"
    result = extract.run(html, "https://cloud.example/services/migration")
    assert result.page_type == pt.SERVICE
    assert "in weeks, not months." in result.text and "get a quote in a day." in result.text
    assert "Copyright" not in result.text
    text = extract(html, "https://news.example/2024/05/the-cloud-migration-story")  # under an article: furniture
    assert "Feature 2." in text and "in weeks, not months." not in text and "get a quote in a day." not in text


def test_a_page_builders_widgets_are_its_content(extract):
    # Every block of the article in an element named "widget" (HubSpot, SiteOrigin...): together they hold
    # most of the page's good text, so they are the page's blocks, not a sidebar's.
    blocks = "".join(f"<div class='so-panel widget widget_text'><p>{PROSE} Block {i}.</p></div>" for i in range(5))
    sidebar = (
        "<aside><div class='widget widget_recent'><p>Recent posts "
        "from the blog, a short list of them.</p></div></aside>"
    )
    text = extract(f"<html><body><div class='content-sidebar-wrap'>{blocks}</div>{sidebar}</body></html>")
    assert "Block 4." in text and "Recent posts" not in text


def test_a_consent_banner_is_never_taken_for_a_wrapper(extract):
    consent = "".join(
        f"<p>These cookies are used to measure how visitors use the site, number {i} of six.</p>" for i in range(6)
    )
    posts = "".join(
        f"<div class='post'><p>A short reply, number {i}, agreeing with the post above.</p></div>" for i in range(4)
    )
    html = (
        f"<html><body><div id='onetrust-consent-sdk'>{consent}</div>"
        f"<main><div class='thread'>{posts}</div></main></body></html>"
    )
    text = extract(html, "https://forum.example.org/threads/hi.1/")
    assert "These cookies" not in text and "A short reply, number 3, agreeing" in text


def test_short_list_items_and_table_rows_without_links_are_kept_beside_text(extract):
    steps = "".join(f"<li>Step {i}: tighten it</li>" for i in range(3))
    links = "".join(f"<li><a href='/{i}'>Link {i}</a></li>" for i in range(3))
    html = (
        f"<html><body><article><p>{PROSE}</p><ul>{steps}</ul><ul>{links}</ul><p>{PROSE} "
        "Again.</p></article></body></html>"
    )
    text = extract(html)
    assert "Step 2: tighten it" in text and "Link 2" not in text


def test_a_page_the_article_rules_find_nothing_on_is_read_as_a_list(extract):
    # A chart or a news feed that says nothing about itself: rows of links with short facts, no prose.
    rows = "".join(
        f"<tr><td>{i}.</td><td><a href='/title/{i}'>The Film Number {i} of the Chart</a></td>"
        f"<td>{1990 + i}</td><td>8.{i}</td></tr>"
        for i in range(20)
    )
    html = (
        "<html><body><nav><a href='/'>Home</a></nav><main><h1>Top "
        f"films</h1><table>{rows}</table></main></body></html>"
    )
    result = extract.run(html, "https://films.example.com/chart/top")
    assert result.page_type == pt.LISTING
    assert "The Film Number 19 of the Chart" in result.text and "Home" not in result.text
    # An article with a few links below it keeps the article rules.
    links = "".join(f"<li><a href='/{i}'>Another story worth reading, number {i}</a></li>" for i in range(5))
    article = f"<html><body><main><p>{PROSE}</p><p>{PROSE} Again.</p><ul>{links}</ul></main></body></html>"
    result = extract.run(article, "https://news.example.com/2024/story")
    assert result.page_type == pt.ARTICLE and "number 4" not in result.text


def test_a_grid_of_item_titles_set_as_headings_is_kept_on_a_listing(extract):
    # Cards of one linked title each, one after another: the heading rule (kept when the text after it is)
    # looks past any number of headings on listings and shop categories.
    cards = "".join(
        f"<div class='card'><h3><a href='/film/{i}'>The Film Number {i} of the Week</a></h3></div>" for i in range(8)
    )
    html = (
        f"<html><body><main><h1>New this week</h1>{cards}<p>Showing 8 of 40 films this week</p></main></body></html>"
    )
    result = extract.run(html, "https://films.example.com/chart/new")
    assert result.page_type == pt.LISTING
    assert "The Film Number 0 of the Week" in lines(result.text)
    assert extract.block_rules(pt.ARTICLE).heading_distance == 3  # articles keep theirs


def test_a_linked_heading_is_an_item_title_on_a_listing_not_on_an_article(extract):
    # A card whose title is a linked heading followed by a short linked line: the title is an item.
    cards = "".join(
        f"<div class='card'><h3><a href='/e/{i}'>Conference on Distributed Things and Stuff, Edition {i}</a>"
        f"</h3><a href='/city/{i}'>Paris, May {i}</a></div>"
        for i in range(8)
    )
    intro = "<p>Every technology conference of the season in one place, updated daily by our editors for you.</p>"
    html = f"<html><body><main><h1>Tech events</h1>{intro}{cards}</main></body></html>"
    result = extract.run(html, "https://events.example.com/tech")
    assert result.page_type == pt.LISTING
    assert "Conference on Distributed Things and Stuff, Edition 7" in lines(result.text)
    assert not extract.block_rules(pt.ARTICLE).linked_headings_near  # an article's linked headings are teasers


def test_a_shop_categorys_linked_product_names_are_items(extract):
    rules = extract.block_rules(pt.COLLECTION)
    assert rules.short_links_near and not extract.block_rules(pt.LISTING).short_links_near
    assert not extract.block_rules(pt.ARTICLE).short_links_near
    intro = "<p>Every console and handheld we sell, with the games and accessories that go with them today.</p>"
    items = "".join(f"<li><a href='/c/{i}'>Console model {i}</a></li>" for i in range(6))
    html = f"<html><body><main>{intro}<ul>{items}</ul><p>Loading</p></main></body></html>"
    text = extract(html, "https://shop.example.com/collections/consoles")
    assert "Console model 5" in lines(text)  # short links were kept only between two good paragraphs


def test_a_page_whose_comments_are_its_text_is_read_as_a_thread(extract):
    # A link aggregator's story: a title and a link, then the comments (named so) hold all the prose.
    comments = "".join(f"<div class='comment'><p>{PROSE} Comment number {i} on the story.</p></div>" for i in range(6))
    html = (
        f"<html><body><main><h1><a href='https://elsewhere.example/x'>Project goals for 2024</a></h1>"
        f"<div class='comments'>{comments}</div></main></body></html>"
    )
    result = extract.run(html, "https://links.example.com/s/abc123/project_goals")
    assert result.page_type == pt.FORUM
    assert "Comment number 5 on the story." in result.text
    # Under an article, comments stay out.
    article = f"<html><body><main><p>{PROSE} Body.</p><p>{PROSE} Body again.</p></main>{comments}</body></html>"
    assert "Comment number" not in extract(article, "https://news.example.com/2024/story")
