"""Turn findings into the redacted text: one winner per overlap, then presidio's operators.

The replacement of each finding is computed by presidio-anonymizer's operator
classes (Replace, Mask, Hash, Keep).  The text is then assembled in one pass
(pieces joined once): presidio's AnonymizerEngine rebuilds the whole string
for every entity, which is quadratic on a long document with many findings.
Everything between findings is copied unchanged.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass

from stages.pii.config import ENTITIES, PiiConfig


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    entity: str
    score: float


# Which entity wins a tie between overlapping findings of equal score:
# credentials before the e-mail-shaped "password@host" inside them, checksummed
# numbers before phone numbers.
PRIORITY = {
    e: i
    for i, e in enumerate(
        (
            "URL_CREDENTIALS",
            "IBAN_CODE",
            "CREDIT_CARD",
            "EMAIL_ADDRESS",
            "IP_ADDRESS",
            "US_SSN",
            "PHONE_NUMBER",
            "PERSON",
            "LOCATION",
        )
    )
}


def resolve(findings: list[Finding]) -> list[Finding]:
    """Non-overlapping findings, in text order: higher score wins, then PRIORITY, then the longer one."""
    order = sorted(set(findings), key=lambda f: (-f.score, PRIORITY.get(f.entity, 99), -(f.end - f.start), f.start))
    starts: list[int] = []
    kept: list[Finding] = []
    for f in order:
        i = bisect.bisect_right(starts, f.start)
        if i > 0 and kept[i - 1].end > f.start:  # overlaps the one before it
            continue
        if i < len(kept) and kept[i].start < f.end:  # overlaps the one after it
            continue
        starts.insert(i, f.start)
        kept.insert(i, f)
    return kept


class Redactor:
    """Applies each entity's action (presidio-anonymizer operators) to a document's findings."""

    def __init__(self, config: PiiConfig):
        from presidio_anonymizer.operators import Hash, Keep, Mask, Replace

        self.ops = {}
        for entity in ENTITIES:
            action = config.entities.of(entity).action
            if action == "replace":
                token, op = config.placeholder.format(entity=entity), Replace()
                self.ops[entity] = lambda v, op=op, t=token: op.operate(v, {"new_value": t})
            elif action == "mask":
                op = Mask()
                self.ops[entity] = lambda v, op=op, c=config.mask_char: op.operate(
                    v, {"masking_char": c, "chars_to_mask": len(v), "from_end": False}
                )
            elif action == "hash":
                params, op = {"hash_type": "sha256", "salt": config.hash_salt or ""}, Hash()
                self.ops[entity] = lambda v, op=op, p=params, e=entity, n=config.hash_chars: (
                    f"<{e}:{op.operate(v, p)[:n]}>"
                )
            else:  # annotate
                op = Keep()
                self.ops[entity] = lambda v, op=op: op.operate(v, {})

    def apply(self, text: str, findings: list[Finding]) -> tuple[str, Counter]:
        """The redacted text and the number of findings per entity (``findings`` resolved, in text order)."""
        out, pos, counts = [], 0, Counter()
        for f in findings:
            out.append(text[pos : f.start])
            out.append(self.ops[f.entity](text[f.start : f.end]))
            pos = f.end
            counts[f.entity] += 1
        out.append(text[pos:])
        return "".join(out), counts
