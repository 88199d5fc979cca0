"""Issue 38, items 1-5: nothing planted anywhere in the inputs reaches a published file unredacted.

An attacker's run: PII planted in every field of a JSON lines and a Parquet dump (the text, nested
metadata at any depth, a key of it, a number, the id, the URL), in the input files' names, in URL
shapes (an address before a file extension, unformatted numbers under PII-named query keys, hosts
written with PII, credentials, fragments) and in paragraphs repeated across pages so that paragraph
dedup lists them with the PII crossing its 100-character cut.  The whole pipeline runs (every
phase, MDS, WebDataset and Megatron shards, the card), and every published file is searched
*decoded*: Parquet columns, MDS samples read back by ``streaming`` (their tokens through the
tokenizer), WebDataset tar members and their names, Megatron ``.bin`` through the tokenizer,
README.md, stats.json, the SVG plots, and every published path.  Common Crawl file names and the
tokenizer's sha256 stay readable in the card.
"""

from __future__ import annotations

import html as html_lib
import json
import random
import re
import tarfile
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config import parse_config
from pipeline.runner import run
from tests.conftest import REPO, Page, html, write_warc

pytestmark = pytest.mark.ray

EMAIL, PHONE, SSN, CARD, IBAN, IP = (
    "maria.kowalski@gmail.com",
    "(415) 867-5309",
    "536-22-1974",
    "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00",
    "81.2.69.160",
)
#: What must appear in no published byte, in any spelling or part (a cut leaves "maria.kowalski@gma", "(415) 867-").
NEEDLES = [
    "kowalski",
    "867-5309",
    "8675309",
    "867 5309",
    "(415) 867",
    "415-867",
    "536-22-1",
    "536221974",
    "22-1974",
    "536 22 1974",
    "4111 1111",
    "4111111111111111",
    "4111-1111",
    "1111 1111 1111",
    "DE89",
    "de89",
    "37040044",
    "3704 0044",
    "81.2.69.",
    "81-2-69-160",
    "s3cretpw",
]
SERVER_IP = "203.0.113.7"  # a host that is the server's address: may stay (docs/pii.md)
CC_NAME = "CC-MAIN-20260112000513-20260112030513-00000.warc.gz"
WORDS = (
    "harbor castle meadow violin rocket winter forest candle island bridge garden planet silver orange thunder "
    "lantern marble copper velvet canyon falcon orchard beacon pepper saddle"
).split()
# URL shapes: (URL, what of it may stay)
URLS = [
    f"https://shop.example/users/{EMAIL}.html",
    f"https://shop.example/u/{EMAIL}_profile.php?page=2",
    "https://shop.example/form?ssn=536221974&page=1",
    "https://shop.example/form?SocialSecurityNumber=536-22-1974",
    "https://shop.example/form?phone=4158675309",
    "https://shop.example/form?tel=%28415%29%20867-5309",
    "https://536-22-1974.ssn.example.com/page",
    "https://415-867-5309.phone.example.com/page",
    "https://4158675309.example.org/page",
    "https://maria.kowalski%40gmail.com.example.net/page",
    "https://81-2-69-160.dyn.isp.example/page",
    f"https://{SERVER_IP}/status/page",
    "https://user:s3cretpw@site.example/private",
    f"https://site.example/p#email={EMAIL}",
    "https://site.example/files/DE89370400440532013000.pdf",
    "https://site.example/card/4111-1111-1111-1111",
    "https://site.example/q?mail=maria.kowalski%2540gmail.com",
    f"https://site.example/ip/{IP}/x",
    "https://ｍａｒｉａ.example/fullwidth",
]
# Paragraphs repeated on many pages (paragraph dedup lists them): PII across its 100th character.
REPEATED = [
    "Please write to our office manager about any question regarding the accounts at the address " + EMAIL + " today.",
    "For urgent matters concerning deliveries and refunds our hotline is open at all hours on "
    + PHONE
    + " every day.",
    "Verification of the employment record of the new member of staff listed here needs the number "
    + SSN
    + " on file.",
    "Our old server that held the archive of the newsletter and its subscriber list was reachable at "
    + IP
    + " until May.",
]
PII_TEXT = f"Reach {EMAIL}, {PHONE}, card {CARD}, IBAN {IBAN}, SSN {SSN}, from {IP}."


def prose(rng: random.Random, sentences: int = 6) -> str:
    return " ".join(" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(sentences))


def metadata(rng: random.Random) -> dict:
    return {
        "author": {"name": "M. K.", "contact": {"email": EMAIL, "phone": PHONE}},
        "ssns": [536221974, "x"],
        "billing": {"card": CARD, "iban": IBAN},
        "seen_from": IP,
        "note": f"ssn {SSN}",
        "ssn": 536221974,
        "tel": 4158675309,
        EMAIL: "an address as a key",
        "topic": rng.choice(WORDS),
    }


def write_inputs(src: Path, rng: random.Random, warc: bool = True) -> None:
    """The WARC (named as Common Crawl names its files), a JSON lines and a Parquet dump named after their PII."""
    if warc:
        pages = []
        for i, url in enumerate(URLS):
            paras = [prose(rng), REPEATED[i % len(REPEATED)], prose(rng)] + ([PII_TEXT] if i % 5 == 0 else [])
            pages.append(Page(url, html(f"Page {i} {rng.random():.6f}", *paras).encode()))
        write_warc(src / CC_NAME, pages)
    lines = []
    for i in range(8):
        lines.append(
            {
                "id": EMAIL if i == 0 else f"{PHONE} #{i}" if i == 1 else f"doc-{i}",
                "text": f"{prose(rng)}\n\n{REPEATED[i % len(REPEATED)]}\n\n{prose(rng)}"
                + (f"\n\n{PII_TEXT}" if i < 2 else ""),
                "url": URLS[i % len(URLS)],
                **metadata(rng),
            }
        )
    (src / f"{EMAIL}_{PHONE}.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    rows = [
        {
            "id": SSN if i == 0 else f"p-{i}",
            "text": f"{prose(rng)}\n\n{REPEATED[i % len(REPEATED)]}\n\n{prose(rng)}",
            "url": URLS[(i + 3) % len(URLS)],
            "meta": {"email": EMAIL, "nested": {"iban": IBAN, "ip": IP}},
            "phones": [PHONE, "none"],
        }
        for i in range(6)
    ]
    pq.write_table(pa.Table.from_pylist(rows), src / f"export {SSN}.parquet")


def attack(out: Path, src: Path, stored: list[str]):
    config = parse_config(
        {
            "name": "attack",
            "inputs": [str(src / "*")],
            "output": {"root": str(out), "rejected_text": True},
            "langid": {"min_score": 0.0},
            "filters": {
                k: {"enabled": False} for k in ("gopher_quality", "gopher_repetition", "c4", "fineweb", "url")
            },
            "dedup": {"paragraphs": {"enabled": True}},
            "shards": {
                "tokenize": {"tokenizer": str(REPO / "samples" / "tokenizer" / "tokenizer.json")},
                "layout": {"text": True, "metadata": stored},
                "shuffle": {"groups": 2},
                "mds": {"size_limit": 1 << 16},
                "webdataset": {"maxcount": 8},
                "megatron": {"enabled": True},
            },
        }
    )
    record = run(config, progress=False)
    assert record["status"] == "ok", record
    return out


@pytest.fixture(scope="module")
def outputs(ray_local, tmp_path_factory) -> dict[str, Path]:
    """A run of WARC and document inputs together (the shards store source, content type, language), and a run of
    the dumps alone whose shards store their metadata too (parts of one schema: issue 38.6 is another item)."""
    mixed, dumps = tmp_path_factory.mktemp("mixed"), tmp_path_factory.mktemp("dumps")
    write_inputs(mixed, random.Random(38))
    write_inputs(dumps, random.Random(83), warc=False)
    base = tmp_path_factory.mktemp("out")
    return {
        "mixed": attack(base / "mixed", mixed, ["source", "content_type", "language"]),
        "dumps": attack(base / "dumps", dumps, ["source", "metadata", "content_type", "language"]),
    }


@pytest.fixture(scope="module")
def output(outputs) -> Path:
    return outputs["mixed"]


def published(out: Path) -> list[Path]:
    """Every file the card's allow-list publishes."""
    from huggingface_hub.utils import filter_repo_objects

    publish = json.loads((out / "card" / "stats.json").read_text())["publish"]
    files = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()]
    return [
        out / f
        for f in filter_repo_objects(
            files, allow_patterns=publish["allow_patterns"], ignore_patterns=publish["ignore_patterns"]
        )
    ]


def tokenizer():
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(REPO / "samples" / "tokenizer" / "tokenizer.json"))


def decoded(out: Path, path: Path) -> str:
    """A published file as a reader sees it: every column, sample, member and token decoded."""
    rel = str(path.relative_to(out))
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False)
    if path.suffix == ".tar":
        with tarfile.open(path) as tar:
            parts = []
            for m in tar.getmembers():
                data = tar.extractfile(m).read()
                body = (
                    tokens_text(np.load(__import__("io").BytesIO(data))) if m.name.endswith(".npy") else data.decode()
                )
                parts += [m.name, body]
            return "\n".join(parts)
    if path.suffix == ".bin" and "megatron" in rel:
        index = json.loads((out / "shards" / "megatron" / "index.json").read_text())
        return tokens_text(np.fromfile(path, dtype=np.dtype(index["dtype"])))
    if path.suffix == ".zstd":  # an MDS shard after zstd (its strings as stored; samples: mds_samples())
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(path.read_bytes()).decode(errors="replace")
    text = path.read_text(errors="replace")
    return html_lib.unescape(text) if path.suffix == ".svg" else text


def tokens_text(ids) -> str:
    return tokenizer().decode([int(i) for i in np.asarray(ids).ravel()], skip_special_tokens=False)


def mds_samples(out: Path) -> str:
    import streaming

    ds = streaming.StreamingDataset(local=str(out / "shards" / "mds"), remote=None, shuffle=False, batch_size=1)
    samples = [ds[i] for i in range(len(ds))]
    assert samples
    return "\n".join(
        json.dumps(
            {k: (tokens_text(v) if k == "tokens" else v) for k, v in s.items()}, default=str, ensure_ascii=False
        )
        for s in samples
    )


def leaks(text: str) -> list[str]:
    forms = {text, unquote(text), unquote(unquote(text)), text.lower()}
    return sorted({n for n in NEEDLES for f in forms if n in f or n.lower() in f})


@pytest.mark.parametrize("which", ["mixed", "dumps"])
def test_no_planted_value_reaches_a_published_file_decoded(outputs, which):
    output = outputs[which]
    files = published(output)
    kinds = {p.suffix for p in files}
    assert {".parquet", ".tar", ".bin", ".zstd", ".json", ".md", ".svg"} <= kinds, kinds
    found = {str(p.relative_to(output)): leaks(decoded(output, p) + "\n" + str(p.relative_to(output))) for p in files}
    found["shards/mds (samples)"] = leaks(mds_samples(output))
    assert {k: v for k, v in found.items() if v} == {}
    if which == "dumps":  # the shards carry the metadata, redacted
        assert "<EMAIL_ADDRESS>" in mds_samples(output) and '"metadata"' in mds_samples(output)


def test_the_planted_values_were_there_to_find(output):
    """The same search finds them in what is not published (the run read them; the test can fail)."""
    raw = [p for p in (output / "documents" / "extracted").glob("*.parquet")]
    assert {"kowalski", "536221974", "4111 1111", "81.2.69."} <= set(leaks("".join(decoded(output, p) for p in raw)))
    run_json = json.loads((output / "run.json").read_text())
    repeated = json.dumps(run_json["phases"]["deduped"]["paragraphs"]["top"])
    assert (
        "<EMAIL_ADDRESS>" in repeated and "<PHONE_NUMBER>" in repeated and "<US_SSN>" in repeated
    )  # redacted, then cut


def test_redacted_fields_keep_their_shape(output):
    final = [
        r for p in sorted((output / "documents" / "final").glob("*.parquet")) for r in pq.read_table(p).to_pylist()
    ]
    assert len({r["id"] for r in final}) == len(final)  # ids with PII stay distinct
    by_id = {r["id"]: r for r in final}
    email_id = [i for i in by_id if i.startswith("<EMAIL_ADDRESS>#")]
    assert len(email_id) == 1 and re.fullmatch(r"<EMAIL_ADDRESS>#[0-9a-f]{8}", email_id[0])
    meta = json.loads(by_id[email_id[0]]["metadata"])
    assert meta["author"]["contact"] == {"email": "<EMAIL_ADDRESS>", "phone": "<PHONE_NUMBER>"}
    assert meta["ssn"] == "<US_SSN>" and meta["tel"] == "<PHONE_NUMBER>" and meta["note"] == "ssn <US_SSN>"
    assert meta["billing"] == {"card": "<CREDIT_CARD>", "iban": "<IBAN_CODE>"} and meta["seen_from"] == "<IP_ADDRESS>"
    assert "<EMAIL_ADDRESS>" in meta and meta["author"]["name"] == "M. K."  # a key redacted, the rest as it was
    sources = {r["source"] for r in final}
    assert {s.rsplit("/", 1)[-1] for s in sources} >= {CC_NAME}  # a crawl's name stays
    assert any(re.fullmatch(r"(.*/)?<MASKED>\.jsonl#[0-9a-f]{8}", s) for s in sources)
    assert any(re.fullmatch(r"(.*/)?<MASKED>\.parquet#[0-9a-f]{8}", s) for s in sources)
    parts = sorted(p.name for p in (output / "documents" / "final").glob("*.parquet"))
    assert [p for p in parts if p.startswith("part-MASKED-")] and any(
        CC_NAME.removesuffix(".warc.gz") in p for p in parts
    )
    urls = {r["url"] for r in final}
    assert f"https://{SERVER_IP}/status/page" in urls  # the server's address
    assert (
        "https://%3CUS_SSN%3E.ssn.example.com/page" in urls
        and "https://shop.example/form?ssn=%3CUS_SSN%3E&page=1" in urls
    )
    assert "https://shop.example/users/%3CEMAIL_ADDRESS%3E" in urls


def test_the_card_keeps_crawl_names_and_checksums_readable(output):
    stats = json.loads((output / "card" / "stats.json").read_text())
    readme = (output / "README.md").read_text()
    files = [f["file"] for f in stats["sources"]["per_file"]]
    assert any(f.endswith(CC_NAME) for f in files) and CC_NAME in readme
    sha = stats["tokens"]["tokenizer"]["sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", sha)
    per_file = {f["file"].rsplit("/", 1)[-1]: f for f in stats["sources"]["per_file"]}
    masked = [f for name, f in per_file.items() if name.startswith("<MASKED>")]
    assert len(masked) == 2 and all(sum(f["kept"].values()) > 0 and f["kept"]["final"] > 0 for f in masked)
    hosts = dict(stats["hosts"]["kept"])
    assert "<US_SSN>.ssn.example.com" in hosts and "<PHONE_NUMBER>.phone.example.com" in hosts
    assert "(IP address)" in hosts
