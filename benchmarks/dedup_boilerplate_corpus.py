"""Pages of one site that share a long block, with true copies under other templates (issue 12).

    python benchmarks/dedup_boilerplate_corpus.py OUT_DIR [--pages 40] [--seed 0]

The hard case for near-duplicate detection: a site puts a long block inside
the article area of every page (a legal disclaimer, a privacy notice in
another language, an author bio) next to a short distinct body.  By text the
pages are then similar (a 60% block gives two pages a 5-gram Jaccard of about
0.43), although no two bodies are the same.  Each block site here has
``pages`` articles whose bodies are 0.67-2.3 times the block's length, so the
block is 30-60% of an article's words; the block's text differs per site:

* ``legal``: an English disclaimer, every paragraph naming a policy (C4's
  policy rule deletes it when the filters are on);
* ``privacy_de``: a German privacy notice (no English policy phrase);
* ``bio``: an author bio (no policy phrase at all).

True duplicates (the ground truth's clusters):

* ``other_site``: a body republished on a plain site (its own short template,
  no block), with a new date line and sometimes a few edited words;
* ``block_site``: a body republished on another block site (under that
  site's block);
* ``same_site``: a body published again at another URL of its own site;
* ``reposts``: one body per site published four times on its site.

Plus unrelated articles on the plain sites.  Writes WARC files (the pages
as a crawler would store them) and ``truth.jsonl`` (one line per page: id,
url, site, kind, block share, cluster, variation).  The same pages are
available as text (:func:`page_text`: what a perfect extractor returns) for
tests that start at phase 2.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import uuid
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

# --- words -------------------------------------------------------------------------------------
# Real English words with English function words, so that language ID and the
# Gopher/C4/FineWeb rules see ordinary prose; bodies draw them at random, so two
# bodies share only the common phrases ("in the middle of the").

NOUNS = """
account agency airport answer apple area army article artist audience autumn balance bank basket beach bench bicycle
bird board boat bottle boundary branch bread bridge brother budget building cabinet camera campaign candle canyon
captain car castle cattle century chair channel chapter cheese chemist child church circle city cliff climate clock
cloud coast coffee college colony comet committee company concert council country county courage court cousin crew
crowd culture customer dancer daughter decade desert designer diamond dinner director doctor dolphin dragon drawer
driver economy editor election engine engineer estate evening factory farmer father feather festival field film
fisherman flower forest fortune fountain friend frontier garden garage gate glacier government grandmother guitar
harbor harvest heritage highway hill historian hospital hotel island journey judge jungle kettle kitchen ladder
lake lantern lawyer leader legend letter library lighthouse lion machine magazine manager map market meadow mechanic
merchant message meteor miner minister mirror monastery monument morning mountain museum musician neighbor network
novel ocean office orchard orchestra painter palace parade parliament passenger pattern pencil pilot pioneer planet
poet police pottery prairie printer prison professor program province publisher quarry railway ranch reader recipe
region reporter republic researcher reservoir restaurant ribbon river rocket sailor scholar school scientist season
senator settlement shepherd shipyard shore singer sister soldier station statue storm stranger street student studio
submarine summit surgeon tailor teacher telescope temple tenant theater tower tractor traveler treasury tribe tunnel
university valley vessel village vineyard violin visitor volcano voyage wagon warehouse waterfall weaver widow window
winter workshop writer
""".split()

VERBS = """
accepted admired adopted announced approached arranged arrived assembled attracted balanced borrowed brought built
captured carried celebrated changed chose cleaned climbed collected completed considered constructed covered crossed
decided defended delivered described designed developed discovered divided documented doubled drew earned emptied
encouraged entered escaped examined expanded explained explored filled finished followed found gathered guarded
guided handled heard helped hid imagined improved inherited inspected invited joined judged kept launched learned
left lifted listened loaded located managed marked measured mentioned moved named noticed observed opened organized
painted passed photographed planned planted prepared presented preserved printed produced protected published pulled
raised reached rebuilt received recorded reduced remembered repaired replaced reported rescued restored returned
revealed sailed saved searched selected sent shared shipped signed sketched solved sorted studied supplied supported
surveyed taught tested tracked traded trained transformed translated traveled treated turned uncovered understood
visited walked washed watched welcomed won wrote
""".split()

ADJECTIVES = """
ancient anxious bright broad brown busy calm careful central cheerful clever cold colorful common curious dark deep
distant dry eager early eastern elegant empty enormous famous fast fierce final flat foreign fresh friendly frozen
gentle giant golden grand gray green happy heavy hidden high historic honest huge humble icy important innocent
large late lazy little local lonely long loud lucky magnificent modern narrow native natural nearby new noble northern
odd old open orange ordinary pale patient peaceful plain polite popular powerful precious proud quiet rapid rare
red remote rich rough round royal rural rusty sacred safe silent silver simple slow small smooth soft southern
special steady steep strange strong sudden sunny sweet tall thin tiny tired traditional quiet urban useful vast
warm weak western wet white wide wild wise wooden young
""".split()

PATTERNS = (
    "The {a} {n} {v} the {n} near the {a} {n}.",
    "In the {n} of the {n}, a {a} {n} {v} {d} {n}s and {v} them to the {n}.",
    "According to the {n}, the {n} was {a} and {a} when the {n} {v} it.",
    "She {v} that the {n} had {v} a {a} {n} for the {n} of the {n}.",
    "Many {n}s {v} the {a} {n} because it {v} the {n} every {n}.",
    "After the {n} {v} the {n}, the {a} {n} {v} a {n} for the {n}.",
    "They {v} the {n} with a {a} {n} and a {a} {n} from the {n}.",
    "It is said that a {a} {n} once {v} the {n} of the {a} {n}.",
    "When the {n} {v} the {n}, nobody {v} the {a} {n} at the {n}.",
    "He {v} {d} {a} {n}s before the {n} {v} the {n} of the {n}.",
)
NUMBER_WORDS = "two three four five six seven eight nine ten twelve twenty several many".split()


def sentence(rng: random.Random) -> str:
    out = rng.choice(PATTERNS)
    for key, pool in (("{a}", ADJECTIVES), ("{n}", NOUNS), ("{v}", VERBS), ("{d}", NUMBER_WORDS)):
        while key in out:
            out = out.replace(key, rng.choice(pool), 1)
    return out


def paragraphs(rng: random.Random, words: int, per_paragraph: int = 60) -> list[str]:
    """About ``words`` words of prose in paragraphs of about ``per_paragraph`` words."""
    out, current, total = [], [], 0
    while total < words:
        s = sentence(rng)
        current.append(s)
        total += len(s.split())
        if sum(len(x.split()) for x in current) >= per_paragraph:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def edit_words(rng: random.Random, paras: list[str], k: int) -> list[str]:
    """``k`` words replaced in one paragraph (an edited copy)."""
    paras = list(paras)
    i = rng.randrange(len(paras))
    words = paras[i].split(" ")
    for j in rng.sample(range(len(words)), min(k, len(words))):
        words[j] = rng.choice(NOUNS)
    paras[i] = " ".join(words)
    return paras


# --- blocks ------------------------------------------------------------------------------------

_LEGAL = (
    "This article is provided for general information only and does not constitute legal, financial or professional "
    "advice. Your use of this website is subject to our terms of use and our privacy policy, which explain how the "
    "{site} editorial team collects, stores and shares information about its readers.",
    "Reproduction of this material without the written permission of {site} is prohibited under our terms of use. "
    "Quotations for the purpose of review or commentary are welcome as long as the source is credited and the "
    "article is linked, as set out in the privacy policy and the copyright notice of the publisher.",
    "Our journalists follow a published code of practice. Where we make a mistake we correct it promptly, and the "
    "corrections policy describes how readers can report an error, how we review every complaint and how the "
    "outcome is recorded beside the article for as long as it remains online.",
    "Advertising on this page is chosen by third parties who may set cookies in your browser; see our cookie policy "
    "for the list of partners and for the settings that let you refuse them. Advertisers have no influence on the "
    "choice of stories or on what our writers conclude, and sponsored content is always labelled as such.",
    "Comments are moderated according to the community guidelines in our terms of use. We remove posts that are "
    "abusive, off topic or commercial, and we may suspend accounts that repeatedly break the rules; the privacy "
    "policy explains how long comments and account data are kept after an account is closed.",
)

_PRIVACY_DE = (
    "Datenschutzhinweis: Wir verarbeiten Ihre personenbezogenen Daten nur, soweit dies für den Betrieb dieser Seite "
    "und für die Bereitstellung unserer Inhalte erforderlich ist. Rechtsgrundlage ist Artikel sechs der "
    "Datenschutz-Grundverordnung, und die Daten werden nicht ohne Ihre Einwilligung an Dritte weitergegeben.",
    "Beim Aufruf der Seite speichert unser Server automatisch Informationen, die Ihr Browser übermittelt, etwa die "
    "Uhrzeit der Anfrage, die Adresse der zuvor besuchten Seite und den verwendeten Browser. Diese Angaben werden "
    "nach sieben Tagen gelöscht und dienen allein der Sicherheit und der Stabilität des Angebots von {site}.",
    "Sie haben jederzeit das Recht auf Auskunft über die bei uns gespeicherten Daten, auf Berichtigung, Löschung "
    "und Einschränkung der Verarbeitung sowie auf Widerspruch. Wenden Sie sich dazu schriftlich an die Redaktion "
    "oder an unseren Beauftragten für den Datenschutz, der Ihre Anfrage innerhalb eines Monats beantwortet.",
    "Für die Reichweitenmessung setzen wir ein eigenes Verfahren ein, das keine Profile bildet und die Adressen der "
    "Besucher vor der Auswertung kürzt. Wenn Sie dennoch nicht erfasst werden möchten, können Sie die Messung in "
    "den Einstellungen Ihres Browsers abschalten, ohne dass die Nutzung der Seite dadurch eingeschränkt wird.",
    "Außerdem haben Sie das Recht, sich bei einer Aufsichtsbehörde zu beschweren, wenn Sie der Ansicht sind, dass "
    "die Verarbeitung Ihrer Daten gegen geltendes Recht verstößt. Diese Erklärung wird angepasst, sobald sich "
    "unsere Verfahren oder die rechtlichen Vorgaben ändern, und die jeweils gültige Fassung steht auf dieser Seite.",
)

_BIO = (
    "About the author: {author} has reported on science, history and travel for {site} since the spring of the "
    "year the magazine was founded. Before joining the staff she spent a decade as a field researcher, working on "
    "coastal archaeology projects from the northern islands to the southern deserts of three continents.",
    "Her first book, a history of lighthouses and the families who kept them, grew out of a series of articles "
    "written for this magazine and was translated into eleven languages. Her second book followed the old trade "
    "routes across the mountains on foot and won a prize for travel writing awarded by a national society.",
    "She studied geography and modern languages at a university in the north, where she later taught a seminar on "
    "writing about landscape for a general audience. She has given talks at museums, libraries and festivals, and "
    "she often answers the questions that readers send to the magazine after one of her stories appears.",
    "When she is not traveling she lives in a small village by the sea with her husband, two children and a "
    "patient old dog, and she spends her weekends restoring a wooden sailing boat that her grandfather built. "
    "Readers who want to suggest a story can write to her through the contact page of the magazine.",
    "Her reporting has been supported by grants from several foundations that fund independent journalism; none of "
    "them has any say in what she writes. A full list of her articles for {site}, with the corrections made to "
    "them over the years, is kept on her author page and is updated whenever a new story is published.",
)

BLOCK_KINDS = {"legal": _LEGAL, "privacy_de": _PRIVACY_DE, "bio": _BIO}
AUTHORS = ("Maria Lindqvist", "Helen Okafor", "Ana Ferreira")


def block_paragraphs(kind: str, site: str, author: str) -> list[str]:
    return [p.format(site=site, author=author) for p in BLOCK_KINDS[kind]]


def words_of(paras: list[str]) -> int:
    return sum(len(p.split()) for p in paras)


# --- pages -------------------------------------------------------------------------------------

MONTHS = "January February March April May June July August September October November December".split()


@dataclass
class Page:
    url: str
    site: str
    title: str
    date: str
    body: list[str]
    block: list[str] = field(default_factory=list)
    kind: str = "article"  # article | copy | filler
    variation: str | None = None  # for copies: other_site | block_site | same_site | reposts
    cluster: str | None = None  # ground-truth duplicate cluster (the original's url)
    id: str = ""

    @property
    def block_share(self) -> float:
        b = words_of(self.block)
        return round(b / (b + words_of(self.body)), 3)


def _date(rng: random.Random) -> str:
    return f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {rng.randint(2016, 2025)}"


def _title(rng: random.Random) -> str:
    return f"The {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} of the {rng.choice(NOUNS)}".title()


def generate(
    pages: int = 40,
    seed: int = 0,
    plain_sites: int = 8,
    fillers: int = 30,
    copy_fraction: float = 0.25,
    share: tuple[float, float] = (0.3, 0.6),
) -> list[Page]:
    """Every page of the corpus, in a fixed order; ``cluster`` is set on each member of a duplicate group.

    ``share``: the range of the block's share of an article's words.
    """
    rng = random.Random(seed)
    block_sites = [(f"{kind.replace('_', '-')}-news.example", kind, AUTHORS[i]) for i, kind in enumerate(BLOCK_KINDS)]
    blocks = {host: block_paragraphs(kind, host, author) for host, kind, author in block_sites}
    plain = [f"plain{i}.example" for i in range(plain_sites)]
    out: list[Page] = []
    for host, kind, _author in block_sites:
        block_words = words_of(blocks[host])
        for i in range(pages):
            fraction = rng.uniform(*share)
            body = paragraphs(rng, int(block_words * (1 - fraction) / fraction))
            out.append(Page(f"https://{host}/{kind}/{i:03d}", host, _title(rng), _date(rng), body, blocks[host]))
    originals = list(out)
    # true copies of some bodies, each variation on its own originals
    chosen = rng.sample(originals, int(copy_fraction * len(originals)))
    for j, orig in enumerate(chosen):
        orig.cluster = orig.url
        variation = ("other_site", "other_site", "block_site", "same_site")[j % 4]
        body = edit_words(rng, orig.body, 3) if rng.random() < 0.5 else list(orig.body)
        if variation == "other_site":
            host = rng.choice(plain)
            copy = Page(f"https://{host}/syndicated/{j:03d}", host, orig.title, _date(rng), body)
        elif variation == "block_site":
            host = rng.choice([h for h, _, _ in block_sites if h != orig.site])
            copy = Page(f"https://{host}/partner/{j:03d}", host, orig.title, _date(rng), body, blocks[host])
        else:
            copy = Page(orig.url + "?print=1", orig.site, orig.title, orig.date, body, blocks[orig.site])
        copy.kind, copy.variation, copy.cluster = "copy", variation, orig.url
        out.append(copy)
    # one body per block site reposted three more times on its own site
    for host, _, _ in block_sites:
        orig = next(p for p in originals if p.site == host and p.cluster is None)
        orig.cluster = orig.url
        for r in range(3):
            body = edit_words(rng, orig.body, 2)
            out.append(
                Page(
                    f"{orig.url}/repost-{r}",
                    host,
                    orig.title,
                    _date(rng),
                    body,
                    blocks[host],
                    kind="copy",
                    variation="reposts",
                    cluster=orig.url,
                )
            )
    for i in range(fillers):
        host = plain[i % len(plain)]
        out.append(
            Page(
                f"https://{host}/story/{i:03d}",
                host,
                _title(rng),
                _date(rng),
                paragraphs(rng, rng.randint(150, 400)),
                kind="filler",
            )
        )
    for p in out:
        p.id = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'boilerplate-corpus/{seed}/{p.url}')}>"
    return out


def page_text(page: Page) -> str:
    """The page as a perfect main-text extractor returns it: title, date line, body, block."""
    return "\n".join([page.title, f"Published {page.date}.", *page.body, *page.block])


def page_html(page: Page) -> str:
    """The page as served: site navigation and footer around an article that holds the block."""
    nav = "".join(
        f'<li><a href="https://{page.site}/{s}">{s.title()}</a></li>' for s in ("news", "science", "travel", "about")
    )
    body = "".join(f"<p>{escape(p)}</p>" for p in page.body)
    block = "".join(f"<p>{escape(p)}</p>" for p in page.block)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(page.title)} | {page.site}</title></head>"
        f'<body><header><a href="https://{page.site}/">{page.site}</a><nav><ul>{nav}</ul></nav></header>'
        f'<main><article><h1>{escape(page.title)}</h1><p class="dateline">Published {page.date}.</p>{body}'
        f'<div class="notice">{block}</div></article></main>'
        f"<footer><p>Copyright {page.site}. All rights reserved.</p></footer></body></html>"
    )


def write_warcs(pages: list[Page], out: Path, files: int = 3) -> list[Path]:
    """The pages as ``files`` gzipped WARC files (responses in a shuffled order, ids from the generator)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out.mkdir(parents=True, exist_ok=True)
    order = list(range(len(pages)))
    random.Random(1).shuffle(order)
    paths = []
    for f in range(files):
        path = out / f"boilerplate-{f:02d}.warc.gz"
        with open(path, "wb") as fh:
            w = WARCWriter(fh, gzip=True)
            for i in order[f::files]:
                p = pages[i]
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
                w.write_record(
                    w.create_warc_record(
                        p.url,
                        "response",
                        payload=io.BytesIO(page_html(p).encode()),
                        http_headers=http,
                        warc_headers_dict={"WARC-Record-ID": p.id},
                    )
                )
        paths.append(path)
    return paths


def truth_rows(pages: list[Page]) -> list[dict]:
    return [
        {
            "id": p.id.strip("<>"),
            "url": p.url,
            "site": p.site,
            "kind": p.kind,
            "block_share": p.block_share if p.block else 0.0,
            "dup_cluster": p.cluster,
            "dup_variation": [p.variation] if p.variation else [],
        }
        for p in pages
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--pages", type=int, default=40, help="articles per block site")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    pages = generate(args.pages, args.seed)
    out = Path(args.out)
    write_warcs(pages, out)
    (out / "truth.jsonl").write_text("".join(json.dumps(r) + "\n" for r in truth_rows(pages)))
    print(json.dumps({"pages": len(pages), "clusters": len({p.cluster for p in pages if p.cluster})}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
