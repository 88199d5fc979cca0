"""How the boilerplate rules change with the kind of page (:mod:`stages.extract.pagetype`).

The defaults were made for articles.  On other pages, content takes shapes
those rules call boilerplate:

- a forum thread's posts sit in elements named ``comment`` or ``reply``
  (IPS, XenForo, vBulletin, Vanilla): there, those elements are content; on
  a Q&A page, only when they hold more good text than the question and its
  answers, which are not named comments (else they are the short comments
  under each post) (:attr:`Profile.comments`); old Reddit and XenForo 1
  wrap each post in a ``<form>``, elsewhere a login or search box
  (:attr:`Profile.forms`);
- shop categories, service and documentation pages keep text in closed
  tabs and accordions (a product's details, an FAQ's answers): hidden
  elements are content there (:attr:`Profile.hidden`);
- customers' reviews under a product (``product-reviews``) are to a shop
  page what readers' comments are to an article (:attr:`Profile.reviews`);
- a listing's or a shop category's items are links (a card is one link
  around a title and a teaser), documentation links every other word to
  the reference, a service page's feature cards end in "learn more":
  link density says little there, and their short lines (a feature, a
  price, a parameter) are items, not scraps; a heading that is a link is an
  item's title (judged as near, not by the text after it), and a grid of
  item titles set as headings is kept with the items after it
  (:attr:`Profile.block_updates`); in a shop category a short linked line
  is a product's name, near as well;
- a service page is its marketing sections: elements named as a banner,
  a promotion or a call to action are its content (:attr:`Profile.open_words`);
- a thread's text is spread over its posts: the content root must hold
  nearly all of it, not the 70% that makes an article's body
  (:attr:`Profile.root_share`).

See docs/extraction.md for the per-type numbers behind each choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stages.extract import pagetype
from stages.extract.classify import ClassifyConfig


@dataclass(frozen=True)
class Profile:
    """The rules for one kind of page, as changes to the article rules."""

    #: comment and reply elements are: "boilerplate", "content", or "content_if_more" (when they hold
    #: more good text than the rest of the page)
    comments: str = "boilerplate"
    #: hidden elements are content (closed tabs and accordions)
    hidden: bool = False
    #: elements named as customers' reviews are content (on a review article, not under a product)
    reviews: bool = True
    #: <form> elements are content (forum software wraps posts in forms)
    forms: bool = False
    #: class words (:data:`stages.extract.hints.BOILERPLATE_WORDS`) whose elements are content on this kind
    open_words: frozenset[str] = frozenset()
    #: the share of the page's good text the content root must hold, if not the config's ``root_share``
    root_share: float | None = None
    #: changes to the block rules (:class:`ClassifyConfig` fields)
    block_updates: dict = field(default_factory=dict)

    def block_rules(self, base: ClassifyConfig) -> ClassifyConfig:
        return base.model_copy(update=self.block_updates) if self.block_updates else base


ARTICLE_PROFILE = Profile()
#: Link density says little, and a short line without links (a feature, a spec, an item's price) is near.
_LINKS_ARE_TEXT = {"max_link_density": 1.0, "max_good_link_density": 1.0, "short_lines_near": True}
#: ... and a page of short lines only (product names, categories) is a list of them; a heading is kept when
#: the text after it is, however many headings come between (a grid of item titles set as headings), and a
#: linked heading is an item's title, judged as near (a card's only line, or followed by a price or a date)
_ITEMS = {**_LINKS_ARE_TEXT, "short_pages": True, "heading_distance": 1000, "linked_headings_near": True}

#: A service page is its marketing sections: a hero named "banner", a "promo" block, a "cta" section with its pitch
#: are what the page says, where under an article they are furniture.
MARKETING_WORDS = frozenset(("banner", "promo", "cta"))
#: A thread's text is spread over its posts, none of which is the page: its root must hold nearly all of the
#: good text (with the article's 70%, a long post, or the opening post and its answers, could be the root alone).
THREAD_ROOT_SHARE = 0.9

PROFILES: dict[str, Profile] = {
    pagetype.ARTICLE: ARTICLE_PROFILE,
    pagetype.FORUM: Profile(comments="content", forms=True, root_share=THREAD_ROOT_SHARE),
    pagetype.QA: Profile(comments="content_if_more", root_share=THREAD_ROOT_SHARE),
    pagetype.PRODUCT: Profile(reviews=False),
    pagetype.COLLECTION: Profile(hidden=True, reviews=False, block_updates={**_ITEMS, "short_links_near": True}),
    pagetype.LISTING: Profile(block_updates=_ITEMS),
    pagetype.DOCUMENTATION: Profile(hidden=True, block_updates=_LINKS_ARE_TEXT),
    pagetype.SERVICE: Profile(hidden=True, open_words=MARKETING_WORDS, block_updates=_LINKS_ARE_TEXT),
}
