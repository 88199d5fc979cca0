"""Ordinary prose pages with PII in their sentences: news, forum and blog posts, company contact pages.

These pages are written to pass the quality filters (Gopher, C4, FineWeb), so
that the sample run hands them to the PII stage: each carries a section of a
real Debian/Apache/Python documentation page (not used anywhere else in the
samples) between paragraphs of generated sentences, and every sentence ends in
punctuation.  The generated sentences (pii_prose.py) plant PII values and
look-alikes; each is listed in the ground truth verbatim.
"""

from __future__ import annotations

import datetime as dt
import random
from html import escape

from . import pii_prose
from .sites import SITES, article_html, render, slugify

STYLES = ("news", "forum", "blog", "contact")
THEME = {"news": "news", "forum": "forum", "blog": "wpblog"}

LEAD = {
    "en": {
        "news": [
            "Administrators who depend on this part of the documentation have been writing to us all week, so we asked around and collected the details.",
            "A small change in a widely used setup guide caused more confusion than expected, and several readers got in touch with our newsroom.",
        ],
        "forum": [
            "Hi all, I have been following the section of the manual quoted below and I am stuck, so I hope somebody here can help.",
            "Hello everyone, before I open a bug report I would like to check whether I misread the documentation quoted below.",
        ],
        "blog": [
            "I keep coming back to this part of the documentation, so here are my notes together with the original text.",
            "This post collects what I learned while setting things up at work last month, with the relevant part of the manual.",
        ],
    },
    "de": {
        "news": [
            "Administratoren, die sich auf diesen Teil der Dokumentation verlassen, haben uns die ganze Woche geschrieben, deshalb haben wir nachgefragt.",
            "Eine kleine Änderung in einer viel genutzten Anleitung hat mehr Verwirrung gestiftet als erwartet, und mehrere Leser haben sich bei uns gemeldet.",
        ],
        "forum": [
            "Hallo zusammen, ich arbeite mich gerade durch den unten zitierten Abschnitt des Handbuchs und komme nicht weiter.",
            "Hallo, bevor ich einen Fehlerbericht schreibe, möchte ich sicher sein, dass ich die unten zitierte Dokumentation richtig verstanden habe.",
        ],
        "blog": [
            "Auf diesen Teil der Dokumentation komme ich immer wieder zurück, deshalb hier meine Notizen zusammen mit dem Originaltext.",
            "In diesem Beitrag sammle ich, was ich bei der Einrichtung im letzten Monat gelernt habe, mit dem passenden Abschnitt des Handbuchs.",
        ],
    },
    "fr": {
        "news": [
            "Les administrateurs qui s’appuient sur cette partie de la documentation nous ont écrit toute la semaine, alors nous avons enquêté.",
            "Un petit changement dans un guide très utilisé a semé plus de confusion que prévu, et plusieurs lecteurs ont contacté la rédaction.",
        ],
        "forum": [
            "Bonjour à tous, je suis la section du manuel citée ci-dessous et je bloque, j’espère que quelqu’un pourra m’aider.",
            "Bonjour, avant d’ouvrir un rapport de bogue, je voudrais vérifier que j’ai bien compris la documentation citée plus bas.",
        ],
        "blog": [
            "Je reviens sans cesse à cette partie de la documentation, voici donc mes notes accompagnées du texte original.",
            "Ce billet rassemble ce que j’ai appris en installant tout cela au travail le mois dernier, avec le passage du manuel concerné.",
        ],
    },
    "es": {
        "news": [
            "Los administradores que dependen de esta parte de la documentación nos han escrito toda la semana, así que hemos preguntado.",
            "Un pequeño cambio en una guía muy utilizada causó más confusión de la esperada, y varios lectores escribieron a la redacción.",
        ],
        "forum": [
            "Hola a todos, estoy siguiendo la sección del manual que cito abajo y me he quedado atascado.",
            "Hola, antes de abrir un informe de error quiero comprobar que he entendido bien la documentación citada más abajo.",
        ],
        "blog": [
            "Vuelvo una y otra vez a esta parte de la documentación, así que aquí van mis notas junto con el texto original.",
            "Esta entrada reúne lo que aprendí al configurar todo en el trabajo el mes pasado, con la parte correspondiente del manual.",
        ],
    },
}

COMPANY = {
    "en": (
        ["Northgate Systems", "Bluefin Hosting", "Maple Street IT", "Harbour Data Services"],
        [
            "We are a small team of administrators and developers who look after servers, networks and backups for local businesses.",
            "Most of our customers are practices, workshops and shops that want their systems to simply keep working.",
            "We have been running Debian servers for our clients for more than a decade and still enjoy the work.",
            "Our office is on the second floor, and visitors are always welcome for a coffee and a chat.",
            "Every new customer starts with a free review of their current setup and an honest written report.",
            "When something breaks at night, one of us is on call and answers within the hour.",
            "We publish our notes and guides so that others can learn from the problems we solved.",
        ],
        ["Contact", "Get in touch", "Contact us"],
    ),
    "de": (
        ["Nordlicht Systemhaus", "Bergmann IT-Dienste", "Rheinblick Hosting", "Kurz & Söhne Netzwerke"],
        [
            "Wir sind ein kleines Team aus Administratoren und Entwicklern, das Server, Netzwerke und Datensicherungen für Betriebe aus der Region betreut.",
            "Zu unseren Kunden gehören Praxen, Handwerksbetriebe und Geschäfte, deren Technik einfach funktionieren soll.",
            "Seit mehr als zehn Jahren betreiben wir Debian-Server für unsere Kunden und machen die Arbeit immer noch gern.",
            "Unser Büro liegt im zweiten Stock, Besucher sind jederzeit auf einen Kaffee willkommen.",
            "Jeder neue Kunde erhält zuerst eine kostenlose Prüfung seiner Umgebung und einen ehrlichen schriftlichen Bericht.",
            "Wenn nachts etwas ausfällt, hat einer von uns Bereitschaft und meldet sich innerhalb einer Stunde.",
            "Unsere Notizen und Anleitungen veröffentlichen wir, damit andere aus den gelösten Problemen lernen können.",
        ],
        ["Kontakt", "So erreichen Sie uns", "Kontakt und Anfahrt"],
    ),
    "fr": (
        ["Atelier Numérique Morel", "Côte Ouest Informatique", "Serveurs du Vercors", "Lumière Réseaux SARL"],
        [
            "Nous sommes une petite équipe d’administrateurs et de développeurs qui s’occupe des serveurs, des réseaux et des sauvegardes des entreprises de la région.",
            "Nos clients sont surtout des cabinets, des artisans et des commerces qui veulent que leur informatique fonctionne, tout simplement.",
            "Nous exploitons des serveurs Debian pour nos clients depuis plus de dix ans et le métier nous plaît toujours autant.",
            "Notre bureau se trouve au deuxième étage et les visiteurs sont toujours les bienvenus pour un café.",
            "Chaque nouveau client commence par un audit gratuit de son installation et un rapport écrit honnête.",
            "Quand une panne survient la nuit, l’un de nous est d’astreinte et répond dans l’heure.",
            "Nous publions nos notes et nos guides pour que d’autres profitent des problèmes que nous avons résolus.",
        ],
        ["Contact", "Nous contacter", "Contact et accès"],
    ),
    "es": (
        ["Sistemas Alameda", "Nube Norte Hosting", "Redes del Turia", "Informática Robles S.L."],
        [
            "Somos un equipo pequeño de administradores y desarrolladores que cuida servidores, redes y copias de seguridad de empresas de la zona.",
            "La mayoría de nuestros clientes son consultas, talleres y tiendas que quieren que sus sistemas simplemente funcionen.",
            "Llevamos más de diez años gestionando servidores Debian para nuestros clientes y el trabajo nos sigue gustando.",
            "Nuestra oficina está en la segunda planta y las visitas siempre son bienvenidas para tomar un café.",
            "Cada cliente nuevo empieza con una revisión gratuita de su instalación y un informe escrito y sincero.",
            "Cuando algo falla de noche, uno de nosotros está de guardia y responde en menos de una hora.",
            "Publicamos nuestras notas y guías para que otros aprendan de los problemas que hemos resuelto.",
        ],
        ["Contacto", "Cómo contactarnos", "Contacto y ubicación"],
    ),
}
EXCERPT = {
    "en": "From our knowledge base",
    "de": "Aus unserer Wissensdatenbank",
    "fr": "Extrait de notre base de connaissances",
    "es": "De nuestra base de conocimiento",
}
DOMAIN_END = {"en": ".example.com", "de": ".example.de", "fr": ".example.fr", "es": ".example.es"}


class Planted:
    """The sentences of one page and the values they carry."""

    def __init__(self, rng: random.Random, lang: str):
        self.rng, self.lang = rng, lang
        self.pii: list[dict] = []
        self.not_pii: list[dict] = []

    def sentences(self, types: list[str]) -> list[str]:
        out = []
        for typ in types:
            text, value = pii_prose.sentence(self.rng, self.lang, typ)
            (self.pii if typ in pii_prose.PII_TYPES else self.not_pii).append({"type": typ, "value": value})
            out.append(text)
        return out

    def paragraphs(self, n_pii: int, n_look: int) -> list[str]:
        """<p> elements of 2-3 sentences with n_pii PII values and n_look look-alikes, in random order."""
        pii_types, look_types = pii_prose.types_for(self.lang)
        types = self.rng.sample(pii_types, min(n_pii, len(pii_types))) + self.rng.sample(look_types, n_look)
        self.rng.shuffle(types)
        sents = self.sentences(types)
        out, i = [], 0
        while i < len(sents):
            k = self.rng.choice([2, 3])
            out.append(f"<p>{escape(' '.join(sents[i : i + k]))}</p>")
            i += k
        return out


def _article_blocks(article, k: int | None = None) -> str:
    blocks = [b for b in article.blocks if b[0] != "pre"]
    return article_html(blocks[:k] if k else blocks)


def post_page(rng: random.Random, lang: str, style: str, article, date: dt.date):
    """A news story, forum post or blog post: PII paragraphs around a real documentation section."""
    site = rng.choice([s for s in SITES if s.lang == lang and s.theme == THEME[style]])
    planted = Planted(rng, lang)
    before = planted.paragraphs(rng.randint(1, 3), rng.randint(2, 3))
    after = planted.paragraphs(rng.randint(1, 3), rng.randint(2, 4))
    main = "\n".join([f"<p>{escape(rng.choice(LEAD[lang][style]))}</p>", *before, _article_blocks(article), *after])
    title = article.title
    html = render(site, title, main, date, rng, n_comments=rng.randint(1, 3) if style == "forum" else None)
    return site.url(rng, title, date), html, site.server, planted


def contact_page(rng: random.Random, lang: str, article, date: dt.date):
    """A small company's contact page: about text, contact and bank sentences, an excerpt of its knowledge base."""
    names, about, titles = COMPANY[lang]
    company = rng.choice(names)
    domain = slugify(company).replace("-", "")[:16] + DOMAIN_END[lang]
    planted = Planted(rng, lang)
    title = f"{rng.choice(titles)} – {company}"
    intro = " ".join(rng.sample(about, 4))
    body = planted.paragraphs(rng.randint(3, 4), rng.randint(2, 4))
    nav = " | ".join(
        f'<a href="/{x.lower()}">{x}</a>'
        for x in rng.sample(["Home", "Services", "Blog", "Team", "Jobs", "Support"], 4)
    )
    html = (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<link rel="stylesheet" href="/css/main.css"></head>\n<body><header><a class="brand" href="/">{escape(company)}</a>'
        f"<nav>{nav}</nav></header>\n<main><h1>{escape(title)}</h1>\n<p>{escape(intro)}</p>\n"
        + "\n".join(body)
        + f'\n<section class="excerpt"><h2>{escape(EXCERPT[lang])}: {escape(article.title)}</h2>\n{_article_blocks(article, 8)}\n</section>\n</main>\n'
        f'<footer><p>© {date.year} {escape(company)} · <a href="/impressum">Impressum</a> · <a href="/privacy">Privacy</a></p></footer></body></html>\n'
    )
    url = f"https://www.{domain}/{slugify(titles[0])}/"
    return url, html, rng.choice(["nginx", "apache"]), planted
