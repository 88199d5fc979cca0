"""Helpers for samples/make_samples.py (sample Common-Crawl-like WARC files).

Modules:
  debian    fetch/extract Debian documentation packages, page catalogue, article sections
  charsets  re-encode real pages into legacy charsets and rewrite charset declarations
  sites     fake web sites: boilerplate templates (header/nav/sidebar/footer/cookie banner/comments)
  synth     generated pages: spam, navigation, PII, error pages, redirects, non-HTML bodies
  pii       PII values (Luhn, IBAN) and PII look-alikes (ISBN, versions, UUIDs ...)
  pii_prose sentences in en/de/fr/es carrying one PII value or look-alike each
  pii_pages prose pages with planted PII: news, forum and blog posts, contact pages
  warcout   CC-style WARC writing with warcio (request/response/metadata, warcinfo)
  broken    deliberately malformed files for samples/broken/
"""
