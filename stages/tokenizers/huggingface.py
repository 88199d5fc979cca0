"""Hugging Face ``tokenizer.json`` (GPT-2, Llama 3, Qwen, Mistral/Gemma conversions) via the tokenizers library."""

from __future__ import annotations

import json
import os

from stages.tokenizers.base import Specials, SpecialToken, TokenIds, Tokenizer, sha256

#: End-of-text tokens by convention, for a file whose post-processor appends none:
#: GPT-2 / GPT-NeoX / Qwen, Llama 3, Llama 2 / Mistral, Gemma.  Pretraining ends every document with one.
EOS_CONVENTIONS = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>")
UTF8_BOM = b"\xef\xbb\xbf"


def set_thread_budget(threads: int) -> None:
    """Limit the library's Rust thread pool for this process.

    With one thread, batch encoding runs in the calling thread (no rayon pool).
    Rayon sizes its global pool once, on first use, from RAYON_NUM_THREADS:
    this must run before the first ``encode_batch``.
    """
    threads = max(
        1, min(threads, os.cpu_count() or 1)
    )  # more threads than cores only compete (a typo must not spawn thousands)
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"
    if threads > 1:
        os.environ["RAYON_NUM_THREADS"] = str(threads)


def template_specials(post_processor: dict | None) -> tuple[str | None, str | None]:
    """(BOS, EOS) strings of a TemplateProcessing's single-text template ("<s> $A" -> ("<s>", None))."""
    if not post_processor:
        return None, None
    if post_processor.get("type") == "Sequence":
        found = [template_specials(p) for p in post_processor.get("processors", [])]
        return next((b for b, _ in found if b), None), next((e for _, e in found if e), None)
    if post_processor.get("type") != "TemplateProcessing" or not post_processor.get("single"):
        return None, None
    single = post_processor["single"]
    first, last = single[0].get("SpecialToken"), single[-1].get("SpecialToken")
    return (first or {}).get("id"), (last or {}).get("id") if len(single) > 1 else None


class HuggingFaceTokenizer(Tokenizer):
    kind = "huggingface"
    label = "Hugging Face tokenizer.json"

    def __init__(self, data: bytes, threads: int = 1):
        from tokenizers import Tokenizer as HFTokenizer

        set_thread_budget(threads)
        try:
            text = data.removeprefix(UTF8_BOM)  # json.loads takes one, the library does not
            self.tokenizer = HFTokenizer.from_buffer(text)
            spec = json.loads(text)
        except Exception as e:  # the library raises a bare Exception with serde's message
            raise ValueError(str(e).splitlines()[0]) from None
        vocab = self.tokenizer.get_vocab(with_added_tokens=True)
        self.sha256 = sha256(data)
        self.vocab_size = len(vocab)
        self.max_id = max(vocab.values())
        self.defaults = self._defaults(spec)
        # Rust-side fast path (no offsets) when the installed tokenizers has it.
        self._encode_batch = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)

    @classmethod
    def sniff(cls, data: bytes) -> bool:
        return data.removeprefix(UTF8_BOM).lstrip()[:1] == b"{"

    def _defaults(self, spec: dict) -> Specials:
        """BOS/EOS from the post-processor's template (EOS by convention when it has none); pad from ``padding``."""
        bos, eos = template_specials(spec.get("post_processor"))
        eos = eos or next((t for t in EOS_CONVENTIONS if self.token_to_id(t) is not None), None)
        pad = (spec.get("padding") or {}).get("pad_token")
        return Specials(*(self._special(t) for t in (bos, eos, pad)))

    def _special(self, token: str | None) -> SpecialToken | None:
        tid = None if token is None else self.token_to_id(token)
        return None if tid is None else SpecialToken(token, tid)

    def _encode_chunk(self, texts: list[str]) -> TokenIds:
        return TokenIds.from_lists([e.ids for e in self._encode_batch(texts, add_special_tokens=False)], self.dtype)

    def token_to_id(self, token: str) -> int | None:
        return self.tokenizer.token_to_id(token)
