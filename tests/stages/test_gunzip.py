"""stages.gunzip: multi-member gzip with ISA-L, checked against Python's gzip."""

import gzip
import io
import random

import pytest

from stages.gunzip import CHECKPOINT_EVERY, Gunzip, GzipError, GzipGap


def drain(reader, n: int = 1 << 16) -> tuple[bytes, Exception | None]:
    parts = []
    try:
        while chunk := reader.read1(n):
            parts.append(chunk)
    except Exception as e:  # the error comes after the data, as it must
        return b"".join(parts), e
    return b"".join(parts), None


def drain_all(reader, n: int = 1 << 16) -> tuple[bytes, list[GzipGap], Exception | None]:
    """Read through every gap to the end: (bytes, gaps met, final error)."""
    parts, gaps = [], []
    while True:
        try:
            chunk = reader.read1(n)
        except GzipGap as gap:
            gaps.append(gap)
            continue
        except Exception as e:
            return b"".join(parts), gaps, e
        if not chunk:
            return b"".join(parts), gaps, None
        parts.append(chunk)


def members(count: int = 40, seed: int = 0) -> tuple[bytes, bytes]:
    """(compressed, plain) of records compressed one gzip member each, like Common Crawl."""
    rng = random.Random(seed)
    plain = [
        b"WARC/1.0\r\n" + bytes(rng.choice(b"abcdefgh <>\n") for _ in range(rng.randrange(10, 30000)))
        for _ in range(count)
    ]
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


def test_bad_checksum_and_garbage_at_the_end_raise_after_the_good_members():
    good = gzip.compress(b"good")
    bad = bytearray(gzip.compress(b"x" * 1000))
    bad[-6] ^= 0xFF  # CRC-32 of the second member
    out, err = drain(Gunzip(io.BytesIO(good + bytes(bad))))
    assert out.startswith(b"good") and isinstance(err, GzipError) and "no valid gzip member after it" in str(err)
    out, err = drain(Gunzip(io.BytesIO(good + b"this is not gzip at all, and long enough")))
    assert out == b"good" and isinstance(err, GzipError)


RECORDS = [
    b"WARC/1.0\r\nrecord %d\r\n" % i + bytes(random.Random(i).choice(b"ab <>") for _ in range(3000)) for i in range(6)
]


def test_a_corrupt_member_is_skipped_and_reading_goes_on():
    members = [gzip.compress(r) for r in RECORDS]
    bad = bytearray(members[2])
    bad[20:40] = b"\xff" * 20  # inside the deflate data
    data = b"".join(members[:2]) + bytes(bad) + b"".join(members[3:])
    out, gaps, err = drain_all(Gunzip(io.BytesIO(data)))
    assert err is None and len(gaps) == 1
    assert out.startswith(b"".join(RECORDS[:2])) and out.endswith(b"".join(RECORDS[3:]))
    gap = gaps[0]
    assert gap.damaged_at == len(members[0]) + len(members[1])
    assert gap.resumed_at == gap.damaged_at + len(members[2])
    assert "corrupt gzip member" in str(gap) and "end" not in str(gap)  # it does not claim the file ended


@pytest.mark.parametrize("garbage", [b"x", b"\x1f\x8b junk that starts like gzip", bytes(range(1, 256)) * 40])
def test_garbage_between_members_is_skipped(garbage):
    members = [gzip.compress(r) for r in RECORDS]
    data = b"".join(members[:3]) + garbage + b"".join(members[3:])
    out, gaps, err = drain_all(Gunzip(io.BytesIO(data)))
    assert err is None and out == b"".join(RECORDS)
    assert len(gaps) == 1 and gaps[0].resumed_at - gaps[0].damaged_at == len(garbage)


def test_a_truncated_member_followed_by_more_members():
    members = [gzip.compress(r) for r in RECORDS]
    data = b"".join(members[:2]) + members[2][: len(members[2]) // 2] + b"".join(members[3:])
    out, gaps, err = drain_all(Gunzip(io.BytesIO(data)))
    assert err is None and len(gaps) == 1
    assert out.startswith(b"".join(RECORDS[:2])) and out.endswith(b"".join(RECORDS[3:]))


def test_resync_prefix_skips_members_that_do_not_start_a_record():
    members = [gzip.compress(r) for r in RECORDS]
    stray = gzip.compress(b"not a record start")
    data = members[0] + b"garbage" + stray + b"".join(members[1:])
    out, gaps, err = drain_all(Gunzip(io.BytesIO(data), resync_prefix=b"WARC/"))
    assert err is None and out == b"".join(RECORDS) and len(gaps) == 1


def test_checkpoints_restart_decompression_at_a_member():
    big = [bytes(random.Random(i).randbytes(CHECKPOINT_EVERY // 3)) for i in range(12)]
    data = b"".join(gzip.compress(b) for b in big)
    gz = Gunzip(io.BytesIO(data))
    out, err = drain(gz)
    assert err is None and out == b"".join(big)
    assert len(gz.checkpoints) >= 3
    for out_off, raw_off in gz.checkpoints[1:]:
        again, err = drain(Gunzip(io.BytesIO(data[raw_off:])))
        assert err is None and again == out[out_off:]


def test_empty_input_is_empty():
    assert drain(Gunzip(io.BytesIO(b""))) == (b"", None)
