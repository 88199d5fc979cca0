"""A page that carries its text twice is extracted once (issue 12, part 2):
the rule on its own, and through the extractor."""

from __future__ import annotations

from pathlib import Path

import pytest

from stages.extract.blocks import Block
from stages.extract.boilerplate import BoilerplateConfig, BoilerplateExtractor
from stages.extract.repeats import drop_repeats

FIXTURES = Path(__file__).parents[2] / "fixtures" / "extract"

PARAS = [
    "The council approved the new bus lanes on Thursday after a debate that lasted most of the afternoon.",
    "Residents on the main road had asked for them for years, citing the queues at the junction each morning.",
    "Work starts in May and should be finished before the schools go back in September, the council said.",
]


def blocks(*texts: str) -> list[Block]:
    return [Block(t, len(t), 0, "p", i, -1, -1) for i, t in enumerate(texts)]


def texts(bs: list[Block]) -> list[str]:
    return [b.text for b in bs]


def test_a_flattened_copy_of_the_paragraphs_is_dropped_wherever_it_is():
    flat = " ".join(PARAS)
    assert texts(drop_repeats(blocks(*PARAS, flat))) == PARAS
    assert texts(drop_repeats(blocks(flat, *PARAS))) == PARAS


def test_a_copy_that_glues_headings_to_paragraphs_is_dropped():
    # "Title" + "First sentence" run together, as a template's textContent does.
    title = "Bus lanes approved for the main road"
    flat = title + "".join(PARAS)
    assert texts(drop_repeats(blocks(title, *PARAS, flat))) == [title, *PARAS]


def test_of_several_copies_one_stays():
    flat = " ".join(PARAS)
    assert texts(drop_repeats(blocks(*PARAS, flat, "Print: " + flat))) == PARAS


def test_a_quote_pulled_out_of_the_text_stays():
    quote = "Residents on the main road had asked for them for years"
    bs = blocks(PARAS[0], quote, *PARAS[1:])
    assert drop_repeats(bs) == bs


def test_a_line_made_of_two_short_lines_stays():
    # A question and a one-word answer, each also a line of its own elsewhere (an FAQ table).
    question = "Will there be a toilet on the replacement bus?"
    bs = blocks(question, "No.", f"{question} No.", *PARAS)
    assert drop_repeats(bs) == bs


def test_spam_that_recombines_the_same_sentences_is_left_for_the_quality_filters():
    s = ["Buy cheap watches online today.", "Best cheap watches of the year.", "Cheap watches with free delivery."]
    lines = [f"{s[0]} {s[1]} {s[2]}", f"{s[1]} {s[0]} {s[2]}", f"{s[2]} {s[1]} {s[0]}", f"{s[0]} {s[2]} {s[1]}"]
    bs = blocks(*lines)
    assert drop_repeats(bs) == bs


def test_pages_without_repeats_are_returned_as_they_are():
    bs = blocks(*PARAS)
    assert drop_repeats(bs) is bs
    assert drop_repeats([]) == []


@pytest.mark.parametrize("case", ["doubled_body_hidden_copy", "doubled_body_print_copy"])
def test_doubled_article_pages_extract_to_the_body_once(case):
    html = (FIXTURES / f"{case}.html").read_text(encoding="utf-8")
    expected = (FIXTURES / f"{case}.txt").read_text(encoding="utf-8").rstrip("\n")
    body = expected.splitlines()[-1]  # the last paragraph
    assert BoilerplateExtractor()(html) == expected
    # Without the rule the page comes out with its text twice.
    doubled = BoilerplateExtractor(BoilerplateConfig(drop_repeats=False))(html)
    assert doubled.count(body) == 2
    assert len(doubled) > 1.7 * len(expected)
