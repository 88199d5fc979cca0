"""The dataset card: a Hugging Face README.md, plots and stats.json computed from a run's outputs.

Modules, in the order the card is made:

- ``plan``: what to read (each phase's status and current parts, the reader's markers);
- ``parts``: per-part aggregates from only the columns needed (one task per part);
- ``collect``: those tasks here, in a process pool or on Ray, summed in part order;
- ``manifest``: the shards manifest, normalized; ``names``: every column and field
  name the card reads from other phases;
- ``funnel`` and ``stats``: stats.json, every number of the card;
- ``examples``: removed documents per reason, PII redacted;
- ``plots`` (SVG, written by ``svg``) and ``render`` (README.md) draw from stats.json only;
- ``build``: compute and publish; ``report``: ``curate report OUTPUT_ROOT``.

See docs/card.md.
"""
