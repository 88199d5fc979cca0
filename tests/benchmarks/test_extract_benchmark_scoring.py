"""The dev-set scoring rule of benchmarks/extraction.py, on hand-made cases."""

from __future__ import annotations

import pytest

from benchmarks.extraction import error_classes, jaccard, page_scores, score


def test_snippets_match_after_whitespace_normalisation():
    gold = [{"with": ["main  text\nhere", "missing"], "without": ["menu item", "footer"]}]
    # with: 1 found (whitespace differs), 1 missing; without: 1 found, 1 absent
    p, r, f = score(["Title\nmain text   here\nmenu item"], gold)
    assert (p, r) == (0.5, 0.5)
    assert f == pytest.approx(0.5)


def test_scores_sum_over_pages_not_average_per_page():
    gold = [
        {"with": ["a1", "a2", "a3"], "without": []},  # 3 TP
        {"with": ["b1"], "without": ["b2"]},  # 0 TP, 1 FN, 1 FP
    ]
    p, r, f = score(["a1 a2 a3", "b2"], gold)
    assert (p, r) == (3 / 4, 3 / 4)
    assert f == pytest.approx(0.75)


def test_empty_text_scores_zero():
    assert score([""], [{"with": ["x"], "without": ["y"]}]) == (0.0, 0.0, 0.0)


def test_jaccard_of_word_5_grams():
    a = "one two three four five six"  # 5-grams: (1..5), (2..6)
    b = "one two three four five seven"  # 5-grams: (1..5), (2..5 + seven)
    assert jaccard(a, b) == pytest.approx(1 / 3)
    assert jaccard(a, a) == 1.0
    assert jaccard("", "") == 1.0


def test_page_scores_are_each_pages_own_f1():
    gold = [{"with": ["a1", "a2"], "without": []}, {"with": ["b1"], "without": ["b2"]}]
    assert page_scores(["a1 a2", "b2"], gold) == [1.0, 0.0]


def test_error_classes_say_where_each_error_comes_from():
    body = "".join(
        f"<p>Paragraph {i} of the story, long enough to count as good text on its own merits.</p>" for i in range(3)
    )
    html = (
        "<html><body><nav><a href='/'>Home</a> <a href='/x'>Lost in the menu</a></nav>"
        f"<article>{body}<p>Subscribe to our newsletter today and never miss a story from the newsroom again.</p>"
        "</article></body></html>"
    )
    gold = [{"with": ["Paragraph 1 of the story", "Lost in the menu"], "without": ["Subscribe to our newsletter"]}]
    lost, leaked = error_classes([html], gold, [0])
    assert lost == {"in an element marked boilerplate": 1}
    assert leaked == {"in the content root, good": 1}


# ---------------------------------------------------------------- WCXB's word-level F1 (benchmarks/wcxb.py)


def test_wcxb_word_f1_is_bag_of_words_overlap():
    from benchmarks.wcxb import word_prf

    # tokens: lower-cased \w+ runs; "the" twice in the prediction, once in the reference
    p, r, f = word_prf("The cat, the HAT!", "the cat sat")
    assert (p, r) == (2 / 4, 2 / 3)
    assert f == pytest.approx(2 * p * r / (p + r))
    assert word_prf("", "") == (1.0, 1.0, 1.0)  # an empty reference rewards an empty prediction only
    assert word_prf("anything", "") == (0.0, 0.0, 0.0)
    assert word_prf("", "some words") == (0.0, 0.0, 0.0)


def _checkout(tmp_path, pages):
    import gzip
    import json

    for sub in ("ground-truth", "html"):
        (tmp_path / "dev" / sub).mkdir(parents=True)
    for file_id, page_type, html, main in pages:
        truth = {
            "url": f"https://example.org/{file_id}",
            "_internal": {"page_type": {"primary": page_type}},
            "ground_truth": {"main_content": main, "with": [], "without": []},
        }
        (tmp_path / "dev" / "ground-truth" / f"{file_id}.json").write_text(json.dumps(truth))
        (tmp_path / "dev" / "html" / f"{file_id}.html.gz").write_bytes(gzip.compress(html.encode()))
    return tmp_path


def test_wcxb_scores_average_pages_per_type(tmp_path):
    from benchmarks import wcxb

    root = _checkout(
        tmp_path,
        [
            ("0001", "article", "<p>alpha beta</p>", "alpha beta"),
            ("0002", "category", "<p>x</p>", "gamma delta"),  # WCXB's old name for a collection
            ("0003", "article", "<p>y</p>", "epsilon"),
        ],
    )
    pages = wcxb.load(root)
    assert [(p.file_id, p.page_type, p.url) for p in pages] == [
        ("0001", "article", "https://example.org/0001"),
        ("0002", "collection", "https://example.org/0002"),
        ("0003", "article", "https://example.org/0003"),
    ]
    assert "alpha beta" in pages[0].html
    scores = wcxb.score(pages, ["alpha beta", "gamma", "nothing"])
    assert scores["article"].pages == 2 and scores["article"].f1 == pytest.approx(0.5)  # 1.0 and 0.0, averaged
    assert scores["collection"].recall == pytest.approx(0.5) and scores["collection"].precision == 1.0
    assert scores["all"].pages == 3 and scores["all"].f1 == pytest.approx((1 + 2 / 3 + 0) / 3)


def test_wcxb_cross_check_against_the_checkouts_evaluate(tmp_path):
    from benchmarks import wcxb

    root = _checkout(tmp_path, [("0001", "article", "<p>a</p>", "alpha beta")])
    pages = wcxb.load(root)
    assert wcxb.cross_check(root, pages, ["alpha"]) == 0  # no evaluate.py: nothing checked
    (root / "evaluate.py").write_text(
        "import re\nfrom collections import Counter\n"
        "def word_f1(predicted, reference):\n"
        "    p, r = re.findall(r'\\w+', predicted.lower()), re.findall(r'\\w+', reference.lower())\n"
        "    o = sum((Counter(p) & Counter(r)).values())\n"
        "    return o / len(p), o / len(r), 2 * o / (len(p) + len(r))\n"
    )
    assert wcxb.cross_check(root, pages, ["alpha"]) == 1
    (root / "evaluate.py").write_text("def word_f1(predicted, reference):\n    return 0.0, 0.0, 0.0\n")
    with pytest.raises(AssertionError, match="0001"):
        wcxb.cross_check(root, pages, ["alpha"])


def test_wcxb_without_a_dev_split_says_how_to_get_one(tmp_path):
    from benchmarks import wcxb

    with pytest.raises(SystemExit, match="dev/ground-truth"):
        wcxb.load(tmp_path)
