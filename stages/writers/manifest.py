"""What ``shards/manifest.json`` says so that a trainer on another machine needs nothing but the shards
folder: the tokenizer (its file copied in, vocabulary size, BOS/EOS/pad ids, dtype), the layout, the
tokens with and without special tokens, what packing dropped, and what a loader that cuts samples at
1024/2048/4096 tokens (or ``layout.seq_len``) would lose.

Pure functions of the tokenizer, the shards config and the groups' counts (their markers' totals); the
shards phase (pipeline/phases/shards.py ``write_manifest``) writes the file.
"""

from __future__ import annotations

import os

from stages.named_files import public_path
from stages.tokenizers import resolve_specials
from stages.writers.trainers import cut_lengths

#: The tokenizer file's folder inside ``shards/`` and its name per tokenizer kind.
TOKENIZER_FOLDER = "tokenizer"
TOKENIZER_FILES = {"huggingface": "tokenizer.json", "sentencepiece": "tokenizer.model"}


def tokenizer_file(kind: str) -> str:
    """Where the run's tokenizer file is copied, relative to ``shards/``."""
    return f"{TOKENIZER_FOLDER}/{TOKENIZER_FILES.get(kind, 'tokenizer.bin')}"


def tokenizer_entry(tokenizer, shards) -> dict:
    """The manifest's ``tokenizer``: the copied file, what it is, and the special tokens the shards use."""
    t = shards.tokenize
    used = resolve_specials(tokenizer, t.bos, t.eos, shards.layout.pad)
    pad = used.pad or used.eos  # the packer pads with layout.pad, else EOS; a loader padding documents should too

    def special(s) -> dict | None:
        return None if s is None else {"token": s.token, "id": s.id}

    # the path as published: relative to the working directory (the driver's: the manifest is written there), or a name
    path = public_path(t.tokenizer, os.getcwd())
    return {
        "file": tokenizer_file(tokenizer.kind),
        "kind": tokenizer.kind,
        "path": path,
        "sha256": tokenizer.sha256,
        "vocab_size": tokenizer.vocab_size,
        "max_id": tokenizer.max_id,
        "dtype": tokenizer.dtype.name,
        "bos": special(used.bos),
        "eos": special(used.eos),
        "pad": special(pad),
        "encoding": "tokenizer.encode(text, add_special_tokens=False) with bos before and eos after every document",
    }


def token_counts(totals: dict, documents: int, entry: dict) -> dict:
    """Tokens of the documents with and without their BOS/EOS, and what the layout did with them."""
    per_document = (entry["bos"] is not None) + (entry["eos"] is not None)
    with_specials = totals.get("document_tokens", 0)
    return {
        "documents": with_specials,
        "text": with_specials - per_document * documents,
        "bos": documents if entry["bos"] is not None else 0,
        "eos": documents if entry["eos"] is not None else 0,
        "dropped": totals.get("dropped_tokens", 0),
        "padding": totals.get("padding_tokens", 0),
        "in_samples": totals.get("tokens", 0),
    }


def dropped_entry(totals: dict, layout) -> dict:
    """Documents and tokens the packed layout's ``remainder: drop`` left out of every format but Megatron's."""
    why = (
        "layout packed, remainder drop: each shuffle group's last "
        f"partial sequence of fewer than {layout.seq_len} tokens"
        if layout.kind == "packed" and layout.remainder == "drop"
        else None
    )
    return {"documents": totals.get("dropped_documents", 0), "tokens": totals.get("dropped_tokens", 0), "why": why}


def truncation_entry(totals: dict, layout) -> dict:
    """Per length L (1024, 2048, 4096, ``layout.seq_len``): samples longer than L and their tokens past L, what a
    loader that cuts samples at L (LLM Foundry at max_seq_len) loses; zeros when no group wrote a sample."""
    cut = totals.get("cut") or {}
    return {str(n): cut.get(str(n), {"samples": 0, "tokens": 0}) for n in cut_lengths(layout.seq_len)}
