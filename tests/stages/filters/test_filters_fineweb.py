"""FineWeb quality rules, each with a hand-computed ratio."""

import pytest

from stages.filters.fineweb import FineWebQualityConfig, FineWebQualityFilter
from tests.filters_helpers import verdict


def line(i: int, end: str = ".") -> str:
    """A distinct line of 7 words and more than 30 characters."""
    return f"Line number {i} of the report says something{end}"


@pytest.fixture(scope="module")
def fw():
    return FineWebQualityFilter()


def test_punctuated_unique_lines_are_kept(fw):
    assert verdict(fw, "\n".join(line(i) for i in range(10))) == (None, None)


def test_line_punct_ratio(fw):
    # 1 of 10 lines ends in terminal punctuation: 0.1 < 0.12.
    text = "\n".join([line(0)] + [line(i, "") for i in range(1, 10)])
    assert verdict(fw, text) == ("fineweb:line_punct_ratio", "0.1 < 0.12")
    # Trailing spaces after the stop still count as punctuated (DataTrove would not).
    text = "\n".join([line(0) + "  ", line(1) + "\t"] + [line(i, "") for i in range(2, 10)])
    assert verdict(fw, text) == (None, None)


def test_line_punct_exclude_zero():
    lenient = FineWebQualityFilter(FineWebQualityConfig(line_punct_exclude_zero=True))
    assert verdict(lenient, "\n".join(line(i, "") for i in range(10))) == (None, None)


def test_short_line_ratio(fw):
    # 7 of 10 lines have at most 30 characters: 0.7 > 0.67.
    short = [f"Short line {i} here." for i in range(7)]  # 19 characters
    text = "\n".join(short + [line(i) for i in range(3)])
    assert verdict(fw, text) == ("fineweb:short_line_ratio", "0.7 > 0.67")


def test_char_dup_ratio(fw):
    # Lines 0..9 and line 0 again: 43 repeated characters over 11*43 = 473 (newlines not counted).
    assert len(line(0)) == 43
    text = "\n".join([line(i) for i in range(10)] + [line(0)])
    assert verdict(fw, text) == ("fineweb:char_dup_ratio", "0.09091 > 0.01")


def test_new_line_ratio(fw):
    # 11 lines of 3 words: 10 newlines / 33 words = 0.303 > 0.3.
    text = "\n".join(f"Extraordinarily{i} magnificent performances." for i in range(11))
    assert verdict(fw, text) == ("fineweb:new_line_ratio", "0.303 > 0.3")
    # 10 lines: 9 / 30 = 0.3, not more.
    assert verdict(fw, text.rsplit("\n", 1)[0]) == (None, None)


def test_blank_lines_are_not_lines(fw):
    # Blank lines do not count as lines, but their newlines count against words
    # (as in DataTrove): 10 lines, 18 newlines / 70 words = 0.257.
    assert verdict(fw, "\n\n".join(line(i) for i in range(10))) == (None, None)


def test_edge_cases(fw):
    assert verdict(fw, "") == ("fineweb:empty_text", "0 == 0")
    assert verdict(fw, "...") == ("fineweb:short_line_ratio", "1 > 0.67")  # punctuated, but short
    assert verdict(fw, "-\n-\n-") == ("fineweb:line_punct_ratio", "0 < 0.12")
    n = 1_000_000 // 44
    reason, _ = verdict(fw, (line(0) + "\n") * n)
    assert reason == "fineweb:char_dup_ratio"


def test_chinese_lines(fw):
    # Terminal punctuation of every script: "。" ends a line.  (Lines of at most
    # 30 characters are short in any script: FineWeb's threshold is English's.)
    text = "\n".join(
        [
            "我们在北京的公园里散步了很久很久，然后坐地铁回到了城市另一边的家里。",
            "今天的天气非常好，阳光明媚温暖，许多人带着孩子来到公园里放风筝和野餐。",
        ]
    )
    assert verdict(fw, text, "zh") == (None, None)
