"""What each trainer expects of the shards, and the warnings a run gets when its layout does not fit the
trainer it names (``shards.trainer``).

Measured on the sample run (docs/shards.md "Which layout for which trainer"): LLM Foundry's text
dataloader cuts every pre-tokenized sample at ``max_seq_len`` (``_read_binary_tokenized_sample``:
``tokens[:max_seq_len]``) and never packs, so the ``document`` layout silently loses every token past
``max_seq_len`` of each document; Megatron-LM / NeMo read one sequence per document and pack them
themselves; a WebDataset loader does what its own collate does.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Sample lengths at which the manifest counts what a loader that cuts samples loses (plus ``layout.seq_len``).
CUT_LENGTHS = (1024, 2048, 4096)


@dataclass(frozen=True)
class Trainer:
    label: str
    #: the shard format it reads
    format: str
    #: the layout it expects: "packed" (fixed-length sequences), "document" (it packs), None (either)
    layout: str | None
    #: whether it cuts each sample at its sequence length (and never packs)
    cuts: bool
    #: what it does with the document layout, and with packed sequences, said plainly in the card and docs
    with_documents: str
    with_packed: str


TRAINERS = {
    "llm-foundry": Trainer(
        "LLM Foundry (text dataloader: StreamingTextDataset)",
        "mds",
        "packed",
        True,
        "LLM Foundry cuts every sample at max_seq_len and does not pack: with one document per sample, every token "
        "past max_seq_len of a document is lost, silently",
        "LLM Foundry reads the packed sequences whole when its max_seq_len equals layout.seq_len",
    ),
    "megatron": Trainer(
        "Megatron-LM / NeMo (GPTDataset over IndexedDataset)",
        "megatron",
        "document",
        False,
        "Megatron-LM and NeMo read one sequence per document and pack them into --seq-length samples themselves",
        "Megatron-LM and NeMo read shards/megatron, which holds one sequence per document whatever the layout",
    ),
    "webdataset": Trainer(
        "a WebDataset loader (webdataset.WebLoader)",
        "webdataset",
        None,
        False,
        "a WebDataset loader gets one document per sample: its collate pads or packs them",
        "a WebDataset loader gets sequences of layout.seq_len tokens, ready to stack",
    ),
}


def cut_lengths(seq_len: int) -> list[int]:
    """The lengths at which truncation is counted: the standard ones and the run's seq_len."""
    return sorted({*CUT_LENGTHS, seq_len})


def trainer_warnings(shards) -> list[str]:
    """Why the layout or formats of ``shards`` (a ShardsConfig) do not fit ``shards.trainer`` (empty: they fit)."""
    name = shards.trainer
    if name is None:
        return []
    t = TRAINERS[name]
    out = []
    fmt = getattr(shards, t.format)
    if not fmt.enabled:
        out.append(
            f"shards.trainer {name} reads shards/{t.format}/, which this "
            f"run does not write: set shards.{t.format}.enabled: true"
        )
    if t.cuts and shards.layout.kind == "document":
        out.append(
            f"shards.trainer {name}: {t.with_documents}. Fix: "
            "shards.layout.kind: packed with seq_len = your max_seq_len "
            f"(now {shards.layout.seq_len})"
        )
    if name == "llm-foundry" and shards.layout.text:
        out.append(
            "shards.trainer llm-foundry tokenizes a sample's 'text' column when it has one, ignoring 'tokens': "
            "set shards.layout.text: false"
        )
    if name == "megatron" and shards.tokenize.eos is None:
        out.append(
            "shards.trainer megatron: GPTDataset concatenates documents "
            "and relies on an EOS between them: set shards.tokenize.eos"
        )
    return out


def cut_warning(shards, cut: dict, stored_tokens: int) -> str | None:
    """The measured loss of a trainer that cuts samples at ``layout.seq_len`` (``cut``: the manifest's
    ``truncation``), or None when the named trainer loses nothing."""
    name = shards.trainer
    if name is None or not TRAINERS[name].cuts:
        return None
    lost = cut.get(str(shards.layout.seq_len), {})
    if not lost.get("tokens"):
        return None
    share = lost["tokens"] / stored_tokens if stored_tokens else 0.0
    return (
        f"shards.trainer {name} with max_seq_len {shards.layout.seq_len} "
        f"would cut {lost['samples']:,} samples and lose "
        f"{lost['tokens']:,} of {stored_tokens:,} tokens ({share:.1%}) of these shards"
    )
