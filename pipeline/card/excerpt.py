"""The README's excerpt of the sample run's card, made from the card itself, and the README with it.

The README quotes the card of its own command (``curate run jobs/sample.yaml``): the summary's first
sentence and the funnel table, as ``  > `` lines under the line that announces them.  They come from a
real run, never by hand: tests/integration/test_readme_card.py runs the README's command and fails when the README
holds another excerpt.  To refresh it after a change of what the card says::

    curate run jobs/sample.yaml && python -m pipeline.card.excerpt out/sample/README.md
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The README line after which the excerpt stands (its end: the first line that is not quoted).
ANNOUNCE = "sample run's card (`out/sample/README.md`):"
QUOTE = "  > "


def excerpt(card: str) -> str:
    """The quoted lines: the summary's first sentence, a blank quoted line, the funnel table."""
    summary = card.split("## Summary\n\n", 1)[1].split("\n", 1)[0]
    first = summary.split(" Made by curate ", 1)[0]
    funnel = card.split("## Funnel\n\n", 1)[1].split("\n\n")
    table = next(block for block in funnel if block.startswith("| step |"))
    return "\n".join((QUOTE + line).rstrip() for line in [first, "", *table.splitlines()])


def readme_with_excerpt(readme: str, card: str) -> str:
    """``readme`` with the quoted lines after ANNOUNCE replaced by the excerpt of ``card``."""
    head, sep, rest = readme.partition(ANNOUNCE + "\n")
    if not sep:
        raise ValueError(f"the README has no line ending in {ANNOUNCE!r}")
    lines = rest.split("\n")
    start = 1 if lines and not lines[0].strip() else 0  # a blank line between the announcement and the quote
    end = start
    while end < len(lines) and lines[end].startswith(QUOTE.rstrip()):
        end += 1
    return head + sep + "\n".join([*lines[:start], excerpt(card), *lines[end:]])


def main(argv: list[str] | None = None) -> int:
    """Rewrite README.md (beside this package) with the excerpt of the card at ``argv[0]``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m pipeline.card.excerpt CARD (the README.md of a run of jobs/sample.yaml)", file=sys.stderr
        )
        return 2
    readme = Path(__file__).resolve().parents[2] / "README.md"
    readme.write_text(readme_with_excerpt(readme.read_text(), Path(args[0]).read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
