"""The Source protocol is the contract of a source kind: every kind has its members, and the README lists them."""

from __future__ import annotations

import re

from stages.sources import Source
from stages.sources.kinds import SOURCES
from tests.conftest import REPO


def members() -> set[str]:
    return set(Source.__annotations__) | {n for n in vars(Source) if not n.startswith("_")}


def test_every_source_kind_has_the_protocols_members():
    for cls in SOURCES:
        missing = sorted(m for m in members() if not hasattr(cls, m))
        assert not missing, f"{cls.__name__} lacks {missing}"


def test_the_readme_lists_the_protocols_members():
    """The README's "Adding a source" names each member of the protocol, and no other (issue 40: the protocol
    declared 5 of the README's 11, and no code used it as a type)."""
    readme = (REPO / "README.md").read_text()
    text = readme.split("- **A source**", 1)[1].split("\n- **", 1)[0]
    listed = set(re.findall(r"`(\w+)(?:\([^`]*\))?`", text.split("; add", 1)[0]))
    assert listed == members()
