"""A tagger that is not fastText: an educational-value score from a word list (the share of a document's words
that are in it, scaled to [0, 1]), declared as a score so filters, the dedup keep rule and the card read it."""

import re

import pyarrow as pa
import pyarrow.compute as pc

EDU_WORDS = (
    "learn",
    "lesson",
    "study",
    "theory",
    "science",
    "history",
    "explain",
    "example",
    "chapter",
    "student",
    "research",
    "method",
    "analysis",
    "definition",
    "university",
    "course",
    "knowledge",
    "education",
)


class EduWords:
    name = "edu_words"
    label = "educational value scored from a word list"
    needs = ("text",)
    adds = ("edu_score",)
    scores = ("edu_score",)
    reasons = ()

    def __init__(self, words: list[str] = EDU_WORDS, saturation: float = 0.05):
        self.pattern = r"(?i)\b(?:" + "|".join(re.escape(w) for w in words) + r")\w*"
        self.saturation = float(saturation)  # this share of edu words or more scores 1

    def __call__(self, batch: pa.Table) -> pa.Table:
        text = batch.column("text")
        hits = pc.count_substring_regex(text, self.pattern).cast(pa.float64())
        words = pc.max_element_wise(pc.count_substring_regex(text, r"\S+").cast(pa.float64()), 1.0)
        share = pc.divide(pc.divide(hits, words), self.saturation)
        score = pc.min_element_wise(share, 1.0).cast(pa.float32())
        at = batch.schema.get_field_index("edu_score")
        return batch.set_column(at, "edu_score", score) if at >= 0 else batch.append_column("edu_score", score)
