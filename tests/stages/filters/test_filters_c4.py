"""C4 line cleaning and document rules, with hand-counted removals."""

import pytest

from stages.filters.c4 import C4Config, C4Filter, count_sentences
from tests.filters_helpers import table

S = [
    "The river rose two metres overnight.",
    "Residents of the valley were moved to the school.",
    "The mayor said the dam was safe.",
    "Engineers will inspect it on Monday.",
    "Rain is expected to ease by Friday.",
]
PROSE = "\n".join(S)  # five sentences on five lines


@pytest.fixture(scope="module")
def c4():
    return C4Filter()


def run(stage, text, language="en"):
    out = stage(table([text], [language]))
    row = out.to_pylist()[0]
    return (
        row["reason"],
        row["details"],
        row["text"],
        row["c4_lines_removed"],
        row["c4_chars_removed"],
        {r["rule"]: r["lines"] for r in row["c4_lines_removed_by"] or []},
    )


def test_count_sentences():
    assert count_sentences("One. Two? Three! four") == 4  # the last one has no terminal mark
    assert count_sentences("It cost 3.5 million.") == 1  # a decimal point ends nothing
    assert count_sentences("„Das ist gut.“ Er ging.") == 2  # closing quotes after the stop
    assert count_sentences("我们今天去。公园散步了。") == 2  # no space after a CJK full stop


def test_clean_prose_is_untouched(c4):
    assert run(c4, PROSE) == (None, None, PROSE, 0, 0, {})


def test_line_rules_remove_lines_and_count_them(c4):
    lines = [
        "Home | News | Sport",  # no terminal punctuation
        "Read more.",  # 2 words < 3
        "Please enable JavaScript to see the map.",  # javascript
        "This site uses cookies to improve your visit.",  # policy
        *S,
    ]
    text = "\n\n".join(lines)
    reason, details, new, n_lines, n_chars, by_rule = run(c4, text)
    assert (reason, new) == (None, PROSE)
    assert n_lines == 4
    assert by_rule == {"no_terminal_punct": 1, "too_few_words": 1, "javascript": 1, "policy": 1}
    assert n_chars == len(text) - len(PROSE)  # the four lines and the blank lines between paragraphs


def test_citation_markers_are_cut(c4):
    text = PROSE.replace("overnight.", "overnight.[1]").replace("safe.", "safe.[citation needed]")
    assert run(c4, text)[2] == PROSE


def test_too_long_word_removes_the_line(c4):
    text = PROSE + "\nSee " + "x" * 1001 + " now."
    assert run(c4, text)[2:6:3] == (PROSE, {"too_long_word": 1})


def test_document_rules(c4):
    assert run(c4, PROSE + "\nLorem ipsum dolor sit amet, consectetur.")[:2] == ("c4:lorem_ipsum", None)
    assert run(c4, PROSE + "\nThe set {1, 2} has two members.")[:2] == ("c4:curly_bracket", None)
    assert run(c4, "\n".join(S[:4]))[:2] == ("c4:too_few_sentences", "4 < 5")
    assert run(c4, " \n ")[:2] == ("c4:empty_text", None)


def test_curly_bracket_only_counts_on_kept_lines(c4):
    # As in C4's reference code: the code line has no terminal punctuation, so
    # it is removed before the bracket check and the document survives.
    reason, _, new, *_ = run(c4, PROSE + "\nif (x > 1) {")
    assert (reason, new) == (None, PROSE)


def test_finewebs_setting_keeps_unpunctuated_lines():
    fineweb = C4Filter(C4Config(filter_no_terminal_punct=False))
    reason, _, new, n_lines, *_ = run(fineweb, "Flood warning for the valley\n" + PROSE)
    assert (reason, n_lines) == (None, 0)
    assert new.startswith("Flood warning")


def test_japanese_lines_end_in_a_full_stop_and_have_words(c4):
    # No spaces: whitespace would see one word a line; ICU finds 私/は/学生/です.
    ja = "\n".join(
        ["私は学生です。", "今日は雨が降っています。", "駅まで歩きました。", "本を読みました。", "夜は早く寝ます。"]
    )
    assert run(c4, ja, "ja")[:3] == (None, None, ja)


def test_one_megabyte_of_one_line(c4):
    # C4 itself does not look for repeats: every copy is a good line.
    line = S[0]
    n = 1_000_000 // (len(line) + 1)
    reason, _, new, n_lines, *_ = run(c4, (line + "\n") * n)
    assert (reason, n_lines, new.count("\n")) == (None, 0, n - 1)


def test_rules_switch_off():
    off = C4Filter(C4Config(filter_javascript=False, filter_policy=False, min_num_sentences=None))
    text = "JavaScript is a programming language used on the web."
    assert run(off, text)[:3] == (None, None, text)


def test_text_column_keeps_its_type(c4):
    out = c4(table([PROSE, "x"]))
    assert out.schema.field("text").type == table([PROSE]).schema.field("text").type
    assert out.column("reason").to_pylist() == [None, "c4:too_few_sentences"]


# C4's reference (TFDS c4_utils.clean_page): a line stays if it ends with one of . ? ! " and not with "...".
def _tfds_keeps(line: str) -> bool:
    return line.endswith((".", "?", "!", '"')) and not line.endswith("...")


LINE_ENDS = [
    "The dam was inspected on the first day (see above.)",  # a bracket after the mark: C4 removes it
    "The list of the engineers is long [as noted.]",
    "The river rose two metres overnight（大雨。）",
    "The mayor spoke and then went on (and so on...)",  # an ellipsis in brackets: no end
    "The mayor said it was all fine and then he left...",  # an ellipsis: no end
    'The mayor said "wait for the report..."',  # ends with the end quotation mark: C4 keeps it
    "The river rose two metres overnight.",
]


@pytest.mark.parametrize("line", LINE_ENDS)
def test_the_line_end_rule_is_c4s_reference_by_default(c4, line):
    text = PROSE + "\n" + line
    kept = run(c4, text)[2] == text
    assert kept == _tfds_keeps(line), line


def test_closing_brackets_after_the_end_mark_are_an_option(c4):
    brackets = C4Filter(C4Config(end_mark_brackets=True))
    for line in LINE_ENDS[:3]:
        assert run(c4, PROSE + "\n" + line)[5] == {"no_terminal_punct": 1}
        assert run(brackets, PROSE + "\n" + line)[2] == PROSE + "\n" + line
    assert run(brackets, PROSE + "\n" + LINE_ENDS[3])[5] == {"no_terminal_punct": 1}  # "...)" is still no end


def test_closing_quotes_and_every_scripts_marks_end_a_line_as_documented(c4):
    # The documented extensions of C4's marks (docs/filters.md): closing quotes after a mark, every script's marks.
    for line in ["Er sagte: „Das ist gut.“ und ging dann.", "Il a dit «c'est fini.»", "The mayor said 'yes.'"]:
        assert run(c4, PROSE + "\n" + line)[2] == PROSE + "\n" + line, line
