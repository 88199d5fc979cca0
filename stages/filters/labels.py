"""Language labels: lid.176's codes (``ru``) and FineWeb-2's / GlotLID's names (``rus_Cyrl``).

Per-language settings are keyed by label.  The bundled language-ID model
(lid.176) labels Russian ``ru``; GlotLID, which FineWeb-2 used, labels it
``rus_Cyrl``, and FineWeb-2's per-language config files are named that way.
:func:`canonical` turns either into one key, so FineWeb-2's ``rus_Cyrl.yml``
applies to documents labelled ``ru`` (lid.176) and ``rus_Cyrl`` (GlotLID) alike.

A name is folded into lid.176's code only when it is *the* name of that code
(``data/lid176_fineweb2.json``): lid.176 has one label for Serbian whatever
the script, and ``sr`` is ``srp_Cyrl``, the script FineWeb-2 has most of;
``srp_Latn`` stays its own key (GlotLID tells the scripts apart).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).parent / "data" / "lid176_fineweb2.json"
#: FineWeb-2's (and GlotLID's) form: an ISO 639-3 code and an ISO 15924 script.
NAME_RE = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")


@lru_cache(maxsize=1)
def lid176_to_fineweb2() -> dict[str, str]:
    """lid.176 code -> the FineWeb-2 name of the same language (its main script)."""
    return json.loads(DATA.read_text(encoding="utf-8"))["lid176_to_fineweb2"]


@lru_cache(maxsize=1)
def _to_lid176() -> dict[str, str]:
    return {name: code for code, name in lid176_to_fineweb2().items()}


@lru_cache(maxsize=1)
def _by_iso_code() -> dict[str, str]:
    """ISO 639-3 code -> the lid.176 code (whatever the script)."""
    return {name.split("_")[0]: code for code, name in lid176_to_fineweb2().items()}


def canonical(label: str) -> str:
    """The key of a label: lid.176's code for that code's FineWeb-2 name, else the label itself."""
    return _to_lid176().get(label, label)


def lid176_code(name: str) -> str | None:
    """lid.176's code of a FineWeb-2 name in any script (``srp_Latn`` -> ``sr``), or None."""
    return _by_iso_code().get(name.split("_")[0]) if NAME_RE.fullmatch(name) else None
