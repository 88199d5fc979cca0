"""Coverage-guided fuzzing of the WARC front end, the URL redactor and the card with atheris (libFuzzer).

    python fuzz/fuzz.py TARGET [libFuzzer options] [CORPUS_DIR ...]

TARGET is one of gunzip, warc, http, charset, extract, url, card (see fuzz/checks.py
for what each checks, and fuzz/README.md for how to run a campaign).  Only our own
modules (``stages``, ``pipeline``) are instrumented: numpy, Arrow and the C parsers are not.
"""

from __future__ import annotations

import logging
import sys

import atheris

# Every hostile input logs a warning: that is the point, but not on the terminal.
logging.disable(logging.CRITICAL)

with atheris.instrument_imports(include=["stages", "pipeline"]):
    import checks


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in checks.CHECKS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(checks.TARGETS)}}} [libFuzzer options] [corpus dirs]")
    check = checks.CHECKS[sys.argv[1]]
    # The checks import what they test lazily (the PII engine, the card): the first run imports it, instrumented.
    with atheris.instrument_imports(include=["stages", "pipeline"]):
        checks.warm_up(sys.argv[1])
    atheris.Setup([sys.argv[0], *sys.argv[2:]], check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
