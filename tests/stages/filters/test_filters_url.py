"""URL filter: domain and URL blocklists, banned words and subwords."""

import gzip
import io
import tarfile

import pytest

from stages.filters.url import HashedSet, UrlFilter, UrlFilterConfig, host_of, normalise_url, read_list
from tests.filters_helpers import table


def judge(stage, urls):
    out = stage(table(["text"] * len(urls), urls=urls))
    return list(zip(out.column("reason").to_pylist(), out.column("details").to_pylist(), strict=False))


@pytest.fixture(scope="module")
def uf():
    return UrlFilter(
        UrlFilterConfig(block_domains=["example.com", "Bad.Example.ORG"], block_urls=["http://www.ut1.org/path/"])
    )


def test_host_and_url_normalisation():
    assert host_of("HTTPS://user:pw@WWW.Example.COM.:8080/a?b#c") == "www.example.com"
    assert host_of("//cdn.example.net/x") == "cdn.example.net"
    assert normalise_url("https://www.ut1.org/path/") == "ut1.org/path"


def test_domain_blocklist_covers_subdomains(uf):
    got = judge(uf, [
        "http://example.com/",
        "https://www.example.com/page",
        "http://a.b.example.com",
        "http://bad.example.org/x",
        "http://notexample.com/",  # a different domain ending in the same letters
        "http://example.com.evil.net/",  # example.com is not a parent domain here
        "http://example.org/",  # only bad.example.org is listed
    ])  # fmt: skip
    assert got == [
        ("url_filter:blocked_domain", "example.com"),
        ("url_filter:blocked_domain", "example.com"),
        ("url_filter:blocked_domain", "example.com"),
        ("url_filter:blocked_domain", "bad.example.org"),
        (None, None),
        (None, None),
        (None, None),
    ]


def test_url_blocklist_is_written_without_scheme(uf):
    # UT1 lists "host/path"; DataTrove compares the full URL and never matches them.
    assert judge(uf, ["https://ut1.org/path", "https://ut1.org/path/other"]) == [
        ("url_filter:blocked_url", None),
        (None, None),
    ]


def test_bundled_word_lists(uf):
    got = judge(uf, [
        "https://videos.net/free-PORN/today",  # banned word, any case
        "https://shop.net/nude-escort-listings",  # two soft-banned words
        "https://museum.net/nude-in-art-history",  # one soft word is not enough
        "https://site.net/2-girls-1-cup",  # banned subword "2 girls 1 cup" -> "2girls1cup"
        "https://en.wikipedia.org/wiki/Essex",  # contains "sex", which is no banned word
        "https://docs.python.org/3/library/re.html",
    ])  # fmt: skip
    assert got == [
        ("url_filter:banned_word", "porn"),
        ("url_filter:soft_banned_words", "escort,nude"),
        (None, None),
        ("url_filter:banned_subword", "2girls1cup"),
        (None, None),
        (None, None),
    ]


def test_word_lists_can_be_replaced():
    own = UrlFilter(
        UrlFilterConfig(use_bundled_word_lists=False, banned_words=["casino"], banned_subwords=["cheap pills"])
    )
    assert judge(own, ["https://x.net/porn", "https://casino.example/", "https://x.net/cheap-pills-now"]) == [
        (None, None),
        ("url_filter:banned_word", "casino"),
        ("url_filter:banned_subword", "cheappills"),
    ]


def test_list_files(tmp_path):
    plain = tmp_path / "domains.txt"
    plain.write_text("# a comment\nplain.example\n\n")
    gz = tmp_path / "domains.gz"
    gz.write_bytes(gzip.compress(b"gz.example\n"))
    tar_path = tmp_path / "blacklists.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        for name, body in [("adult/domains", b"tar.example\n"), ("adult/urls", b"tar.example/page\n")]:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    assert list(read_list(plain)) == ["plain.example"]
    assert list(read_list(tar_path, "urls")) == ["tar.example/page"]
    uf = UrlFilter(
        UrlFilterConfig(block_domains_files=[str(plain), str(gz), str(tar_path)], block_urls_files=[str(tar_path)])
    )
    assert len(uf.domains) == 3 and len(uf.urls) == 1
    assert [r for r, _ in judge(uf, ["http://plain.example/", "http://x.gz.example/", "http://tar.example/"])] == [
        "url_filter:blocked_domain"
    ] * 3


def test_missing_list_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="list file not found"):
        UrlFilter(UrlFilterConfig(block_domains_files=[str(tmp_path / "nope.txt")]))


def test_missing_url_is_kept_and_recorded(uf):
    out = uf(table(["a", "b"], urls=[None, "https://example.net/"]))
    assert out.column("reason").to_pylist() == [None, None]
    assert out.column("filter_skipped").to_pylist() == [["url_filter: no url"], None]


def test_hashed_set():
    s = HashedSet(["a.com", "b.org", "a.com"])
    assert len(s) == 2
    assert "a.com" in s and "b.org" in s and "c.net" not in s
    assert "x" not in HashedSet([])
