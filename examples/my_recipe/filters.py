"""A link-density filter: removes documents with more URLs than ``max_per_100_words`` per 100 words."""

import pyarrow as pa
import pyarrow.compute as pc

LINK = r"(?i)\b(?:https?://|www\.)\S+"


class LinkDensity:
    name = "link_density"
    label = "at most a few links per 100 words"
    needs = ("text",)
    adds = ()
    reasons = ("link_density",)

    def __init__(self, max_per_100_words: float = 5.0):
        self.max = float(max_per_100_words)

    def __call__(self, batch: pa.Table) -> pa.Table:
        text = batch.column("text")
        links = pc.count_substring_regex(text, LINK).cast(pa.float64())
        words = pc.max_element_wise(pc.count_substring_regex(text, r"\S+").cast(pa.float64()), 1.0)
        density = pc.multiply(pc.divide(links, words), 100.0)
        bad = pc.fill_null(pc.greater(density, self.max), False)
        details = pc.if_else(
            bad,
            pc.binary_join_element_wise('{"per_100_words": ', pc.round(density, 2).cast(pa.string()), "}", ""),
            pa.scalar(None, pa.string()),
        )
        reason = pc.if_else(bad, pa.scalar("link_density"), pa.scalar(None, pa.string()))
        if "reason" in batch.column_names:  # a reason an earlier step gave stays
            reason = pc.coalesce(batch.column("reason"), reason)
            details = pc.if_else(pc.is_valid(batch.column("reason")), batch.column("details"), details)
        for column, values in (("reason", reason), ("details", details)):
            at = batch.schema.get_field_index(column)
            batch = batch.set_column(at, column, values) if at >= 0 else batch.append_column(column, values)
        return batch
