"""Text a page carries twice is kept once.

Some pages hold their article twice: a visible copy in paragraphs and a
second one for print, for a paywall script or for search engines, flattened
into one element or laid out differently (issue 12: a business-news page
extracted to twice its article, and the Gopher duplicate-n-gram rule then
removed the document).  When both copies sit in the content, the exact
line dedup of :func:`stages.extract.classify.classify` does not see it: the
lines differ, the sentences do not.

So a kept block is dropped when most of its text (``min_share``) is made
of the texts of two or more other kept blocks: the flattened copy holds
every paragraph of the visible one.  The largest block is judged first and
a dropped block no longer counts as holding the others, so one copy always
stays, the one with its paragraphs.  Copies laid out alike are already
dropped line by line by the exact-line rule.

A sentence repeated here and there is not a copy: a quote pulled out of
the text (one block inside another) stays, as do spam pages that recombine
the same sentences into every line (the quality filters' repetition rules
are there for them and must see the repeats).

Cost: a few substring searches for the start of the longest blocks (a copy
repeats them); only where one is found (7% of the dev set's pages) are the
blocks split into sentences, and only where repeated sentences make up
``min_page_share`` of the text are blocks searched for inside the blocks
that share a sentence.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter

from stages.extract.blocks import Block

# A sentence ends at . ! ? or their full-width forms, with or without a space
# after it (a copy made of an element's textContent glues paragraphs
# together: "...last sentence.First sentence..."); not after a digit
# ("1. FC", "3. November", "3.5", numbered lines).
_SENTENCE_END = re.compile(r"(?<=[^\s\d][.!?])\s*|(?<=[。！？])")


def _may_repeat(blocks: list[Block], probes: int = 8, probe_chars: int = 40) -> bool:
    """Whether the start of one of the ``probes`` longest blocks occurs twice
    in the text: a copy holds the longest paragraphs of the other copy.  A
    few substring searches in C, so that most pages cost ~50 µs here."""
    longest = heapq.nlargest(probes, (b.text for b in blocks if len(b.text) >= probe_chars), key=len)
    if len(longest) < 2:
        return False
    text = "\n".join(b.text for b in blocks)
    for t in longest:
        probe = t[:probe_chars]
        if text.find(probe, text.find(probe) + 1) >= 0:
            return True
    return False


def _sentences(text: str, min_chars: int) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if len(s) >= min_chars]


def _covered(block: Block, others: list[Block], min_chars: int) -> int:
    """Characters of ``block`` made of the whole texts of two or more other
    blocks of ``min_chars`` or more (one block inside another is a quote:
    left alone; "No." or "Share" inside a line proves nothing)."""
    text = block.text
    spans = []
    for other in others:
        if other is not block and min_chars <= len(other.text) < len(text):
            at = text.find(other.text)
            if at >= 0:
                spans.append((at, at + len(other.text)))
    covered = end = 0
    if len(spans) >= 2:
        for start, stop in sorted(spans):
            if stop > end:
                covered += stop - max(start, end)
                end = stop
    return covered


def drop_repeats(
    blocks: list[Block], min_share: float = 0.8, min_page_share: float = 0.2, min_sentence_chars: int = 20
) -> list[Block]:
    """``blocks`` less the copies of others: blocks ``min_share`` of whose
    text is other blocks' whole texts, on a page where sentences repeated
    across blocks make up ``min_page_share`` of the text (sentences and
    blocks shorter than ``min_sentence_chars`` do not count: "Read more.",
    "Yes.")."""
    if not _may_repeat(blocks):
        return blocks  # most pages
    per_block = [_sentences(b.text, min_sentence_chars) for b in blocks]
    counts: Counter = Counter()
    for sentences in per_block:
        counts.update(set(sentences))
    repeated = sum(len(s) * (n - 1) for s, n in counts.items() if n > 1)
    if repeated < min_page_share * sum(len(b.text) for b in blocks):
        return blocks  # a few repeated sentences: no copy
    alive = list(blocks)
    dropped: set[int] = set()
    # Largest first: of a flattened copy and its paragraphs, the copy goes;
    # of two equal copies, the later.
    for i in sorted(range(len(blocks)), key=lambda i: (-len(blocks[i].text), -i)):
        sentences = per_block[i]
        if not any(counts[s] > 1 for s in sentences):
            continue
        block = blocks[i]
        if _covered(block, alive, min_sentence_chars) >= min_share * len(block.text):
            dropped.add(i)
            alive.remove(block)
            counts.subtract(set(sentences))
    return [b for i, b in enumerate(blocks) if i not in dropped] if dropped else blocks
