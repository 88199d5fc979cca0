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
        {"with": ["a1", "a2", "a3"], "without": []},   # 3 TP
        {"with": ["b1"], "without": ["b2"]},           # 0 TP, 1 FN, 1 FP
    ]
    p, r, f = score(["a1 a2 a3", "b2"], gold)
    assert (p, r) == (3 / 4, 3 / 4)
    assert f == pytest.approx(0.75)


def test_empty_text_scores_zero():
    assert score([""], [{"with": ["x"], "without": ["y"]}]) == (0.0, 0.0, 0.0)


def test_jaccard_of_word_5_grams():
    a = "one two three four five six"       # 5-grams: (1..5), (2..6)
    b = "one two three four five seven"     # 5-grams: (1..5), (2..5 + seven)
    assert jaccard(a, b) == pytest.approx(1 / 3)
    assert jaccard(a, a) == 1.0
    assert jaccard("", "") == 1.0


def test_page_scores_are_each_pages_own_f1():
    gold = [{"with": ["a1", "a2"], "without": []}, {"with": ["b1"], "without": ["b2"]}]
    assert page_scores(["a1 a2", "b2"], gold) == [1.0, 0.0]


def test_error_classes_say_where_each_error_comes_from():
    body = "".join(f"<p>Paragraph {i} of the story, long enough to count as good text on its own merits.</p>" for i in range(3))
    html = (
        "<html><body><nav><a href='/'>Home</a> <a href='/x'>Lost in the menu</a></nav>"
        f"<article>{body}<p>Subscribe to our newsletter today and never miss a story from the newsroom again.</p>"
        "</article></body></html>"
    )
    gold = [{"with": ["Paragraph 1 of the story", "Lost in the menu"], "without": ["Subscribe to our newsletter"]}]
    lost, leaked = error_classes([html], gold, [0])
    assert lost == {"in an element marked boilerplate": 1}
    assert leaked == {"in the content root, good": 1}
