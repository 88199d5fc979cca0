"""SentencePiece ``.model`` files (Llama 2, Mistral, Gemma, T5...) via the sentencepiece library.

Ids are exactly ``SentencePieceProcessor.encode(text)``'s (no BOS/EOS: the
tokenize stage adds them); the model's own normalizer, dummy prefix, digit
splitting and byte fallback all apply, since the library does the encoding.
"""

from __future__ import annotations

from stages.tokenizers.base import Specials, SpecialToken, TokenIds, Tokenizer, sha256


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A protobuf varint at ``pos``: (value, position after it); (-1, pos) when cut off."""
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos
    return -1, pos


class SentencePieceTokenizer(Tokenizer):
    kind = "sentencepiece"
    label = "SentencePiece .model"

    def __init__(self, data: bytes, threads: int = 1):
        import sentencepiece as spm

        self.threads = threads
        self.processor = spm.SentencePieceProcessor()
        try:
            self.processor.LoadFromSerializedProto(data)
        except (RuntimeError, OSError) as e:  # the library's message is "INTERNAL: <file>(<line>) [<check>]"
            raise ValueError(str(e).strip().splitlines()[0]) from None
        self.sha256 = sha256(data)
        self.vocab_size = self.processor.get_piece_size()
        self.max_id = self.vocab_size - 1
        self.defaults = Specials(
            *(self._special(i) for i in (self.processor.bos_id(), self.processor.eos_id(), self.processor.pad_id()))
        )

    @classmethod
    def sniff(cls, data: bytes) -> bool:
        """A serialized ModelProto starts with its first piece: field 1 (``pieces``), itself
        starting with field 1 (``piece``), both length-delimited (tag byte 0x0A)."""
        if data[:1] != b"\x0a":
            return False
        length, pos = read_varint(data, 1)
        return 0 < length <= len(data) - pos and data[pos : pos + 1] == b"\x0a"

    def _special(self, piece_id: int) -> SpecialToken | None:
        """A special the model defines (id -1 = the model has none)."""
        return SpecialToken(self.processor.id_to_piece(piece_id), piece_id) if piece_id >= 0 else None

    def _encode_chunk(self, texts: list[str]) -> TokenIds:
        ids = self.processor.encode(texts, add_bos=False, add_eos=False, num_threads=self.threads)
        return TokenIds.from_lists(ids, self.dtype)

    def token_to_id(self, token: str) -> int | None:
        # The library maps every unknown piece to <unk>'s id: only a round trip says it exists.
        tid = self.processor.piece_to_id(token)
        return tid if self.processor.id_to_piece(tid) == token else None
