"""stages.gunzip: multi-member gzip with ISA-L, checked against Python's gzip."""

import gzip
import io
import random

import pytest

from stages.gunzip import Gunzip


def drain(reader, n: int = 1 << 16) -> tuple[bytes, Exception | None]:
    parts = []
    try:
        while chunk := reader.read1(n):
            parts.append(chunk)
    except Exception as e:  # the error comes after the data, as it must
        return b"".join(parts), e
    return b"".join(parts), None


def members(count: int = 40, seed: int = 0) -> tuple[bytes, bytes]:
    """(compressed, plain) of records compressed one gzip member each, like Common Crawl."""
    rng = random.Random(seed)
    plain = [b"WARC/1.0\r\n" + bytes(rng.choice(b"abcdefgh <>\n") for _ in range(rng.randrange(10, 30000))) for _ in range(count)]
    return b"".join(gzip.compress(p) for p in plain), b"".join(plain)


@pytest.mark.parametrize("n", [1, 1000, 1 << 16, 1 << 20])
def test_multi_member_file_decompresses_like_gzip(n):
    data, plain = members()
    out, err = drain(Gunzip(io.BytesIO(data)), n)
    assert err is None
    assert out == plain == gzip.decompress(data)


def test_truncated_file_raises_after_returning_the_bytes_before_the_cut():
    data, plain = members()
    rng = random.Random(1)
    for cut in [rng.randrange(1, len(data)) for _ in range(40)] + [1, 9, len(data) - 1]:
        theirs, _ = drain(gzip.GzipFile(fileobj=io.BytesIO(data[:cut])))
        ours, err = drain(Gunzip(io.BytesIO(data[:cut])))
        assert isinstance(err, EOFError), cut
        assert plain.startswith(ours)
        # Inflate may hold back a byte or so of the member that is cut off.
        assert len(theirs) - 8 <= len(ours) <= len(theirs), cut


def test_a_cut_between_members_is_a_clean_end():
    first, second = gzip.compress(b"first record"), gzip.compress(b"second record")
    assert drain(Gunzip(io.BytesIO(first + second)))[0] == b"first recordsecond record"
    assert drain(Gunzip(io.BytesIO(first))) == (b"first record", None)


def test_zero_padding_between_members_is_skipped_as_gzip_does():
    data = gzip.compress(b"a" * 100_000) + b"\0" * 200_000 + gzip.compress(b"b")
    assert drain(Gunzip(io.BytesIO(data))) == (b"a" * 100_000 + b"b", None)
    assert gzip.decompress(data) == b"a" * 100_000 + b"b"


def test_bad_checksum_and_garbage_raise_after_the_good_members():
    good = gzip.compress(b"good")
    bad = bytearray(gzip.compress(b"x" * 1000))
    bad[-6] ^= 0xFF  # CRC-32 of the second member
    out, err = drain(Gunzip(io.BytesIO(good + bytes(bad))))
    assert out.startswith(b"good") and err is not None and not isinstance(err, EOFError)
    out, err = drain(Gunzip(io.BytesIO(good + b"this is not gzip at all, and long enough")))
    assert out == b"good" and err is not None


def test_empty_input_is_empty():
    assert drain(Gunzip(io.BytesIO(b""))) == (b"", None)
