"""Generated pages: SEO spam, navigation pages, PII pages, error pages, redirects, non-HTML bodies.

Every generator takes a random.Random and returns plain data (strings/bytes plus ground-truth
hints); make_samples.py turns them into captures.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import random
import struct
import zlib
from html import escape

from . import pii as P
from .sites import CATEGORIES, HEADLINES, NICKS, SITES, L, Site, fmt_date, render, slugify

# ================================================================= spam

SPAM_NICHES = [
    (
        "replica watches",
        ["Rolex", "Omega", "Breitling", "TAG Heuer", "Cartier", "Patek Philippe", "Hublot"],
        ["Submariner", "Daytona", "Speedmaster", "Navitimer", "Carrera", "Santos", "Nautilus", "Big Bang"],
    ),
    (
        "cheap sneakers",
        ["Nike", "Adidas", "Jordan", "Yeezy", "New Balance", "Puma"],
        ["Air Max 90", "Retro 4", "Boost 350", "990v5", "Suede Classic", "Dunk Low"],
    ),
    (
        "payday loans",
        ["QuickCash", "LoanNow", "FastFunds", "CashPlus", "MoneyMan"],
        ["no credit check", "same day", "instant approval", "bad credit ok", "online 24/7"],
    ),
    (
        "weight loss pills",
        ["SlimFast Pro", "KetoBurn", "GarciniaMax", "LeanX", "FitTea"],
        ["1000mg", "60 capsules", "extra strength", "natural formula", "rapid results"],
    ),
    (
        "essay writing service",
        ["EssayPro", "PaperHelp", "WriteMyEssay", "GradeMiners"],
        ["cheap essays", "plagiarism free", "24h delivery", "PhD writers", "college papers"],
    ),
    (
        "casino bonus",
        ["Spin Palace", "LuckyDays", "Royal Vegas", "Jackpot City", "Casumo"],
        ["no deposit bonus", "100 free spins", "welcome bonus", "cashback", "VIP program"],
    ),
]

SPAM_SENTENCES = {
    "en": [
        "Buy {kw} online at the best price with free shipping worldwide.",
        "Looking for {kw}? We have the best {kw} deals of {year}.",
        "Our {kw} are the cheapest {kw} on the internet, cheap {kw} for everyone.",
        "{KW} best price, {kw} discount, {kw} sale, {kw} cheap.",
        "Order {kw} today and save up to 80% on {kw}!",
        "Top quality {kw} – 100% satisfaction guarantee – {kw} fast delivery.",
        "Why pay more? Get {kw} cheap now. Best {kw} {year}. {KW} reviews.",
        "Click here for {kw}, {kw} coupon code, {kw} promo.",
    ],
    "de": [
        "{KW} günstig kaufen – bester Preis, kostenloser Versand.",
        "{KW} online bestellen und bis zu 80% sparen!",
        "Die besten {kw} {year} im Test: {kw} billig, {kw} Angebot, {kw} kaufen.",
        "Jetzt {kw} sichern – {kw} ohne Risiko, {kw} sofort.",
    ],
    "fr": [
        "Acheter {kw} pas cher au meilleur prix, livraison gratuite.",
        "{KW} en promo : jusqu’à -80% sur {kw} !",
        "Meilleur {kw} {year}, {kw} pas cher, {kw} discount, {kw} avis.",
        "Commandez {kw} maintenant, {kw} livraison 24h.",
    ],
    "ru": [
        "Купить {kw} дешево с доставкой по всей России.",
        "{KW} недорого – лучшие цены на {kw} в {year} году!",
        "{KW} купить, {kw} цена, {kw} отзывы, {kw} скидки.",
        "Закажите {kw} сейчас и получите скидку 50% на {kw}.",
    ],
    "ja": [
        "{kw}を激安価格で販売中！送料無料。",
        "{kw}の最安値はこちら。{kw} 通販 {kw} 激安 {kw} 人気。",
        "{year}年最新{kw}ランキング、{kw}を今すぐチェック！",
    ],
}
SPAM_KW_LOCAL = {
    "de": ["Replica Uhren", "Online Casino Bonus", "Kredit ohne Schufa", "Abnehmtabletten"],
    "fr": ["montres replica", "casino en ligne bonus", "crédit rapide", "pilules minceur"],
    "ru": ["реплики часов", "казино онлайн бонус", "займ без отказа", "таблетки для похудения"],
    "ja": ["ブランドコピー時計", "オンラインカジノ ボーナス", "即日融資", "ダイエットサプリ"],
}
SPAM_TLDS = ["biz", "info", "top", "xyz", "online", "shop", "club", "site", "ru", "cn"]


def spam_domain(rng, kw):
    words = slugify(kw) or "shop"
    return f"{rng.choice(['best', 'cheap', 'top', 'buy', 'my', 'super', '1'])}-{words}-{rng.choice(['online', 'store', 'deals', 'outlet', '2026', 'pro'])}.{rng.choice(SPAM_TLDS)}"


def _spam_links(rng, kw, n):
    return "".join(
        f'<a href="http://{spam_domain(rng, kw)}/">{escape(kw)} {rng.choice(["cheap", "best", "online", "sale", "2026", "review"])}</a> '
        for _ in range(n)
    )


def spam_page(rng: random.Random, lang: str, style: str) -> tuple[str, str, str]:
    """Return (url, title, html)."""
    year = rng.choice([2024, 2025, 2026])
    if lang == "en":
        kw, brands, models = rng.choice(SPAM_NICHES)
    else:
        kw = rng.choice(SPAM_KW_LOCAL[lang])
        brands, models = SPAM_NICHES[0][1], SPAM_NICHES[0][2]
    domain = spam_domain(rng, kw if lang == "en" else rng.choice(["replica", "casino", "kredit", "diet"]))
    KW = kw[:1].upper() + kw[1:]
    title = " | ".join(
        [
            f"{KW} {x}"
            for x in rng.sample(
                ["Best Price", "Cheap", "Online", "Sale", str(year), "Shop", "Discount", "Free Shipping"], 4
            )
        ]
    )
    sents = SPAM_SENTENCES[lang]
    say = lambda: rng.choice(sents).format(kw=kw, KW=KW, year=year)  # noqa: E731
    parts = []
    if style == "stuffing":
        for _ in range(rng.randint(5, 12)):
            parts.append("<p>" + escape(" ".join(say() for _ in range(rng.randint(3, 7)))) + "</p>")
        parts.append(f'<div style="display:none">{escape((kw + " ") * rng.randint(40, 120))}</div>')
        parts.append(
            f'<p class="kw" style="color:#fff;font-size:1px">{escape(", ".join(f"{kw} {m}" for m in models * 3))}</p>'
        )
    elif style == "products":
        parts.append('<div class="products">')
        for _ in range(rng.randint(40, 120)):
            b, m = rng.choice(brands), rng.choice(models)
            price = rng.randint(19, 299) + 0.99
            parts.append(
                f'<div class="product"><a href="/product/{slugify(b + " " + m)}-{rng.randint(100, 9999)}.html"><img src="/images/{rng.randint(1000, 9999)}.jpg" alt="{escape(kw)}">'
                f'<span class="name">{escape(b)} {escape(m)} {escape(kw)} AAA+ {rng.choice(["Black", "Blue", "Gold", "Silver", "Red"])} {rng.choice(["40mm", "42mm", "Men", "Women", "Unisex"])}</span></a>'
                f'<span class="old-price"><del>${price * rng.randint(3, 9):.2f}</del></span> <span class="price">${price:.2f}</span> <a class="buy" href="/cart/add">Buy Now</a></div>'
            )
        parts.append("</div>")
        parts.append("<p>" + escape(" ".join(say() for _ in range(4))) + "</p>")
    elif style == "spun":
        spin = {
            "en": [
                "{Are you|Have you been} {looking for|searching for|hunting for} {the best|the top|the greatest} {kw}? {You have come to|You are at|This is} the {right|perfect|ideal} {place|site|website}.",
                "{Many|Lots of|Plenty of} {people|customers|folks} {wonder|ask|question} {whether|if} {kw} {really|actually|truly} {work|are worth it}.",
                "{In this|In our|Within this} {article|post|guide} we {will|shall} {explain|describe|show} {everything|all} {about|regarding} {kw}.",
                "{Remember|Keep in mind|Note} that {quality|price|value} {matters|is important|counts} {when|if} {buying|purchasing|ordering} {kw}.",
            ],
        }.get(lang)
        if spin is None:
            spin = [s.replace("{kw}", "{kw}").replace("{KW}", "{kw}") for s in sents]
        for _ in range(rng.randint(8, 16)):
            s = rng.choice(spin)
            out, i = [], 0
            while i < len(s):
                if (
                    s[i] == "{"
                    and not s.startswith("{kw}", i)
                    and not s.startswith("{KW}", i)
                    and not s.startswith("{year}", i)
                ):
                    j = s.index("}", i)
                    out.append(rng.choice(s[i + 1 : j].split("|")))
                    i = j + 1
                else:
                    out.append(s[i])
                    i += 1
            parts.append("<p>" + escape("".join(out).format(kw=kw, KW=KW, year=year)) + "</p>")
    else:  # doorway / link farm
        parts.append(
            "<ul class='links'>"
            + "".join(f"<li>{_spam_links(rng, kw, 1)}</li>" for _ in range(rng.randint(30, 80)))
            + "</ul>"
        )
        parts.append("<p>" + escape(" ".join(say() for _ in range(6))) + "</p>")
    html = (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="keywords" content="{escape(", ".join([kw] * 5 + [f"{kw} {x}" for x in ["cheap", "best", "buy", "online", "sale", str(year)]]))}">'
        f'<meta name="description" content="{escape(say())}"><meta name="robots" content="index,follow"></head>\n'
        f'<body><div id="top"><h1>{escape(KW)} – {escape(say())}</h1><div class="menu">{_spam_links(rng, kw, 8)}</div></div>\n'
        + "\n".join(parts)
        + f'\n<div id="footer"><p>{escape(KW)} © {year} | {_spam_links(rng, kw, 12)}</p><p>Tags: {escape(", ".join(f"{kw} {m}" for m in models))}</p></div>'
        f'<script>var _0x{rng.randint(1000, 9999)}=["\\x72\\x65\\x66"];if(document.referrer.indexOf("google")>-1){{location.href="http://{spam_domain(rng, kw)}/go.php?id={rng.randint(1, 999)}";}}</script></body></html>\n'
    )
    path = rng.choice(
        [
            f"/{slugify(kw)}-{slugify(rng.choice(models))}.html",
            f"/index.php?p={rng.randint(10, 9999)}",
            f"/{slugify(kw)}/",
            "/",
        ]
    )
    return f"http://{domain}{path}", title, html


# ================================================================= navigation pages


def category_page(site: Site, rng: random.Random, titles: list[str], date: dt.date) -> tuple[str, str, str]:
    lab = L[site.lang]
    cat = rng.choice(CATEGORIES[site.lang])
    page_no = rng.randint(2, 40)
    items = []
    for t in rng.sample(titles, min(len(titles), rng.randint(20, 45))):
        d = date - dt.timedelta(days=rng.randint(0, 900))
        items.append(
            f'<li class="post-item"><a href="/{d.year}/{d.month:02d}/{slugify(t, rng)}/">{escape(t)}</a> '
            f'<span class="date">{escape(fmt_date(d, site.lang, 1))}</span> <a class="more" href="#">{escape(lab["read_more"])} »</a></li>'
        )
    pager = (
        " ".join(f'<a href="/category/{slugify(cat) or "c"}/page/{i}/">{i}</a>' for i in range(1, 12))
        + f' … <a href="#">{escape(lab["next"])} »</a>'
    )
    main = f'<ul class="post-list">{"".join(items)}</ul><div class="pagination">{escape(lab["page"])} {page_no} · {pager}</div>'
    title = f"{cat} – {lab['page']} {page_no}"
    html = render(site, title, main, date, rng, kind="listing", n_comments=0)
    return (
        f"https://{site.domain}/category/{slugify(cat) or 'c' + str(rng.randint(1, 99))}/page/{page_no}/",
        title,
        html,
    )


def sitemap_page(site: Site, rng: random.Random, titles: list[str], date: dt.date) -> tuple[str, str, str]:
    lab = L[site.lang]
    groups = []
    for cat in CATEGORIES[site.lang]:
        links = "".join(
            f'<li><a href="/{slugify(cat) or "c"}/{slugify(t, rng)}.html">{escape(t)}</a></li>'
            for t in rng.sample(titles, min(len(titles), rng.randint(5, 25)))
        )
        groups.append(f'<li><a href="/{slugify(cat) or "c"}/"><b>{escape(cat)}</b></a><ul>{links}</ul></li>')
    main = f'<ul class="sitemap">{"".join(groups)}</ul>'
    return (
        f"https://{site.domain}/sitemap.html",
        lab["sitemap"],
        render(site, lab["sitemap"], main, date, rng, kind="listing", n_comments=0),
    )


def tag_archive_page(site: Site, rng: random.Random, titles: list[str], date: dt.date) -> tuple[str, str, str]:
    lab = L[site.lang]
    words = sorted({w.strip(".,:;()") for t in titles for w in t.split() if len(w) > 3})
    cloud = " ".join(
        f'<a href="/tag/{slugify(w, rng)}/" style="font-size:{rng.randint(8, 24)}pt">{escape(w)}</a>'
        for w in rng.sample(words, min(len(words), 80))
    )
    months = "".join(
        f'<li><a href="/{date.year - i // 12}/{12 - i % 12:02d}/">{date.year - i // 12}-{12 - i % 12:02d}</a> ({rng.randint(1, 30)})</li>'
        for i in range(36)
    )
    main = f'<div class="tagcloud">{cloud}</div><h2>{escape(lab["archives"])}</h2><ul class="archive">{months}</ul>'
    title = f"{lab['tags']} & {lab['archives']}"
    return (
        f"https://{site.domain}/archives/",
        title,
        render(site, title, main, date, rng, kind="listing", n_comments=0),
    )


DIRECTORY_CATS = ["Computers", "Internet", "Software", "Open Source", "Linux", "Programming", "Hosting", "Security"]


def directory_page(rng: random.Random, titles: list[str], date: dt.date) -> tuple[str, str, str]:
    cat = rng.choice(DIRECTORY_CATS)
    sub = rng.choice(DIRECTORY_CATS)
    domain = rng.choice(["webdir-links.info", "best-site-directory.com", "linklist24.net", "free-web-directory.org"])
    entries = []
    for _ in range(rng.randint(25, 60)):
        t = rng.choice(titles)
        host = f"{slugify(t, rng)[:20].strip('-')}.{rng.choice(['com', 'net', 'org', 'de', 'io'])}"
        entries.append(
            f'<li><a href="http://{host}/" rel="nofollow">{escape(t)}</a> - <span class="url">http://{host}/</span> '
            f'<span class="pr">PR{rng.randint(0, 6)}</span></li>'
        )
    cats = " | ".join(f'<a href="/{slugify(c)}/">{c}</a> ({rng.randint(10, 5000)})' for c in DIRECTORY_CATS)
    title = f"{cat} > {sub} - Web Directory"
    html = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title></head><body>'
        f'<table width="100%"><tr><td><a href="/"><b>{escape(domain)}</b></a></td><td align="right"><a href="/submit.php">Submit Site</a> | <a href="/login.php">Login</a></td></tr></table>'
        f'<div class="cats">{cats}</div><h1>{escape(title)}</h1><p><a href="/">Top</a> » <a href="/{slugify(cat)}/">{cat}</a> » {sub}</p>'
        f"<ol>{''.join(entries)}</ol><p>Pages: " + " ".join(f'<a href="?p={i}">{i}</a>' for i in range(1, 20)) + "</p>"
        f'<div class="footer">© {date.year} {escape(domain)} | <a href="/terms.php">Terms</a> | <a href="/link-to-us.php">Link to us</a></div></body></html>\n'
    )
    return f"http://{domain}/{slugify(cat)}/{slugify(sub)}/", title, html


def autoindex_page(rng: random.Random, date: dt.date) -> tuple[str, str, str]:
    host = rng.choice(["ftp.mirror-archive.example.net", "files.univ-example.edu", "download.opensource-mirror.org"])
    path = rng.choice(["/pub/linux/", "/debian/pool/main/p/", "/software/releases/", "/data/2019/"])
    rows = [
        '<tr><td valign="top"><img src="/icons/back.gif" alt="[PARENTDIR]"></td><td><a href="../">Parent Directory</a></td><td>&nbsp;</td><td align="right">  - </td></tr>'
    ]
    for _ in range(rng.randint(15, 60)):
        name = (
            rng.choice(["python3", "apache2", "nginx", "openssl", "curl", "libxml2", "bash", "coreutils", "zlib"])
            + f"-{P.version(rng).lstrip('v')}"
            + rng.choice([".tar.gz", ".tar.xz", ".zip", "/", ".deb", ".sha256"])
        )
        d = date - dt.timedelta(days=rng.randint(0, 3000))
        rows.append(
            f'<tr><td valign="top"><img src="/icons/{"folder" if name.endswith("/") else "compressed"}.gif" alt="[   ]"></td>'
            f'<td><a href="{escape(name)}">{escape(name)}</a></td><td align="right">{d.isoformat()} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}  </td>'
            f'<td align="right">{"-" if name.endswith("/") else str(rng.randint(1, 900)) + rng.choice(["K", "M"])}</td></tr>'
        )
    html = (
        f'<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">\n<html>\n <head>\n  <title>Index of {path}</title>\n </head>\n <body>\n<h1>Index of {path}</h1>\n'
        f'  <table>\n   <tr><th valign="top"><img src="/icons/blank.gif" alt="[ICO]"></th><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th><th><a href="?C=S;O=A">Size</a></th></tr>\n'
        + "\n".join(rows)
        + f"\n</table>\n<address>Apache/2.4.57 (Debian) Server at {host} Port 443</address>\n</body></html>\n"
    )
    return f"https://{host}{path}", f"Index of {path}", html


# ================================================================= PII pages

PII_TEXT = {
    "en": dict(
        contact_intro="Our support team is available Monday to Friday, 9 am to 5 pm. For urgent questions please call us; for everything else e-mail is the fastest way to reach the right person.",
        staff="Team",
        role=["Office manager", "Head of sales", "Customer support", "Accounting", "Technical lead"],
        bank="Bank details for transfers",
        bank_note="Please always quote your invoice number as the payment reference.",
        order_intro="Thank you for your order! We will let you know as soon as your items have shipped. Below is a summary of your purchase.",
        order="Order",
        date="Date",
        total="Total",
        paid_with="Paid with card",
        tracking="Tracking number",
        txn="Transaction ID",
        forum_intro="Since this morning our web server is behaving strangely. The access log is full of requests like the ones below and the load average is through the roof. We are running the versions listed, fully patched as far as I know. Any ideas what is going on?",
        book_intro="Here are the books I recommend to anyone who wants to get serious about system administration. All of them are still in print; prices are what I paid last month.",
        author_contact="Questions about this list? Write to me at {email} or call {phone}.",
        paste_intro="customer export – DO NOT SHARE",
        ticket_intro="Hello, after upgrading the agent our dashboard stopped showing data. Please find the details of my environment below.",
        phone="Phone",
        email="E-mail",
        fax="Fax",
        address="Address",
        reg="Registered office",
    ),
    "de": dict(
        contact_intro="Unser Kundenservice ist montags bis freitags von 9 bis 17 Uhr für Sie da. Bei dringenden Anliegen rufen Sie uns bitte an, ansonsten erreichen Sie den richtigen Ansprechpartner am schnellsten per E-Mail.",
        staff="Ansprechpartner",
        role=["Büroleitung", "Vertrieb", "Kundenservice", "Buchhaltung", "Technische Leitung"],
        bank="Bankverbindung",
        bank_note="Bitte geben Sie als Verwendungszweck immer Ihre Rechnungsnummer an.",
        order_intro="Vielen Dank für Ihre Bestellung! Wir benachrichtigen Sie, sobald die Ware versandt wurde. Hier finden Sie eine Übersicht Ihres Einkaufs.",
        order="Bestellung",
        date="Datum",
        total="Gesamtsumme",
        paid_with="Bezahlt mit Kreditkarte",
        tracking="Sendungsnummer",
        txn="Transaktions-ID",
        forum_intro="Seit heute früh verhält sich unser Webserver merkwürdig. Im Access-Log stehen massenhaft Anfragen wie unten, die Last ist extrem hoch. Installiert sind die unten genannten Versionen, alles aktuell. Hat jemand eine Idee?",
        book_intro="Diese Bücher empfehle ich allen, die sich ernsthaft mit Systemadministration beschäftigen wollen. Alle sind noch lieferbar, die Preise habe ich letzten Monat bezahlt.",
        author_contact="Fragen zur Liste? Schreiben Sie mir an {email} oder rufen Sie an: {phone}.",
        paste_intro="Kundenexport – NICHT WEITERGEBEN",
        ticket_intro="Hallo, nach dem Update des Agents zeigt unser Dashboard keine Daten mehr an. Anbei die Details zu meiner Umgebung.",
        phone="Telefon",
        email="E-Mail",
        fax="Fax",
        address="Anschrift",
        reg="Sitz der Gesellschaft",
    ),
    "fr": dict(
        contact_intro="Notre service client est joignable du lundi au vendredi de 9 h à 17 h. Pour toute demande urgente, appelez-nous ; sinon, l’e-mail reste le moyen le plus rapide de joindre la bonne personne.",
        staff="Votre équipe",
        role=["Responsable administrative", "Commercial", "Service client", "Comptabilité", "Responsable technique"],
        bank="Coordonnées bancaires",
        bank_note="Merci d’indiquer systématiquement votre numéro de facture en référence du virement.",
        order_intro="Merci pour votre commande ! Nous vous préviendrons dès l’expédition de vos articles. Voici le récapitulatif de votre achat.",
        order="Commande",
        date="Date",
        total="Total",
        paid_with="Payé par carte",
        tracking="Numéro de suivi",
        txn="Identifiant de transaction",
        forum_intro="Depuis ce matin notre serveur web se comporte bizarrement. Le journal d’accès est rempli de requêtes comme celles-ci et la charge explose. Les versions installées sont indiquées ci-dessous. Une idée ?",
        book_intro="Voici les livres que je conseille à tous ceux qui veulent progresser en administration système. Ils sont tous disponibles ; les prix sont ceux payés le mois dernier.",
        author_contact="Des questions sur cette liste ? Écrivez-moi à {email} ou appelez le {phone}.",
        paste_intro="export clients – NE PAS DIFFUSER",
        ticket_intro="Bonjour, depuis la mise à jour de l’agent notre tableau de bord n’affiche plus rien. Voici les détails de mon environnement.",
        phone="Téléphone",
        email="Courriel",
        fax="Fax",
        address="Adresse",
        reg="Siège social",
    ),
    "es": dict(
        contact_intro="Nuestro equipo de atención al cliente está disponible de lunes a viernes de 9 a 17 h. Para consultas urgentes llámanos; para todo lo demás, el correo electrónico es la vía más rápida.",
        staff="Equipo",
        role=["Administración", "Ventas", "Atención al cliente", "Contabilidad", "Responsable técnico"],
        bank="Datos bancarios",
        bank_note="Indica siempre tu número de factura como concepto de la transferencia.",
        order_intro="¡Gracias por tu pedido! Te avisaremos en cuanto enviemos los artículos. A continuación tienes el resumen de tu compra.",
        order="Pedido",
        date="Fecha",
        total="Total",
        paid_with="Pagado con tarjeta",
        tracking="Número de seguimiento",
        txn="ID de transacción",
        forum_intro="Desde esta mañana nuestro servidor web se comporta de forma extraña. El registro de accesos está lleno de peticiones como las de abajo y la carga está por las nubes. Estas son las versiones instaladas. ¿Alguna idea?",
        book_intro="Estos son los libros que recomiendo a quien quiera tomarse en serio la administración de sistemas. Todos siguen a la venta; los precios son los que pagué el mes pasado.",
        author_contact="¿Preguntas sobre la lista? Escríbeme a {email} o llama al {phone}.",
        paste_intro="exportación de clientes – NO COMPARTIR",
        ticket_intro="Hola, después de actualizar el agente nuestro panel dejó de mostrar datos. Adjunto los detalles de mi entorno.",
        phone="Teléfono",
        email="Correo",
        fax="Fax",
        address="Dirección",
        reg="Domicilio social",
    ),
}
COUNTRY = {"en": ["US", "GB", "AU", "IN"], "de": ["DE"], "fr": ["FR"], "es": ["ES", "MX"]}
IBAN_COUNTRY = {"en": ["GB", "NL", "BE", "CH"], "de": ["DE", "AT", "CH"], "fr": ["FR", "BE"], "es": ["ES", "IT"]}
BOOKS = [
    "UNIX and Linux System Administration Handbook",
    "The Linux Command Line",
    "How Linux Works",
    "Site Reliability Engineering",
    "The Practice of System and Network Administration",
    "TCP/IP Illustrated, Volume 1",
    "Designing Data-Intensive Applications",
    "Fluent Python",
    "Linux Kernel Development",
    "The Debian Administrator's Handbook",
]
COMPANIES = {
    "en": ["Meridian Dental Care", "Harbor Logistics Ltd", "Brightside Web Studio", "Oak & Pine Furniture"],
    "de": ["Bauer Haustechnik GmbH", "Schreinerei Hoffmann", "Kanzlei Weber & Partner", "Müller IT-Service"],
    "fr": ["Boulangerie Moreau", "Cabinet Girard Avocats", "Roux Informatique SARL", "Atelier Laurent"],
    "es": ["Clínica Dental Romero", "Talleres Navarro S.L.", "Asesoría López", "Torres Informática"],
}


class PiiCollector:
    def __init__(self):
        self.pii, self.not_pii = [], []

    def add(self, typ, value):
        self.pii.append({"type": typ, "value": value})
        return escape(value)

    def nope(self, typ, value):
        self.not_pii.append({"type": typ, "value": value})
        return escape(value)


def pii_page(rng: random.Random, lang: str, style: str, date: dt.date):
    """Return (url, title, main_html, site_or_None, collector). Values are registered as they are printed."""
    T = PII_TEXT[lang]
    c = PiiCollector()
    country = lambda: rng.choice(COUNTRY[lang])  # noqa: E731
    dfmt = lambda d: fmt_date(d, lang, rng.randint(0, 2))  # noqa: E731
    site = None
    if style == "contact":
        company = rng.choice(COMPANIES[lang])
        domain = slugify(company, rng).replace("-", "")[:18] + rng.choice(
            {
                "en": [".com", ".co.uk", ".com.au"],
                "de": [".de", ".at"],
                "fr": [".fr", ".be"],
                "es": [".es", ".com.mx"],
            }[lang]
        )
        rows = []
        for _ in range(rng.randint(3, 5)):
            f, surname = P.person(rng, lang)
            e = P.email(rng, lang, f, surname)
            rows.append(
                f"<tr><td>{escape(f)} {escape(surname)}</td><td>{escape(rng.choice(T['role']))}</td>"
                f"<td>{c.add('PHONE_NUMBER', P.phone(rng, country()))}</td>"
                f'<td><a href="mailto:{escape(e)}">{c.add("EMAIL_ADDRESS", e)}</a></td></tr>'
            )
        main = (
            f"<h2>{escape(T['address'])}</h2><p>{escape(company)}<br>{rng.randint(1, 120)} {escape(rng.choice(['Main Street', 'Hauptstraße', 'rue de la Paix', 'Calle Mayor']))}</p>"
            f"<p>{escape(T['contact_intro'])}</p>"
            f"<p>{escape(T['phone'])}: {c.add('PHONE_NUMBER', P.phone(rng, country()))} · {escape(T['fax'])}: {c.add('PHONE_NUMBER', P.phone(rng, country()))} · "
            f"{escape(T['email'])}: {c.add('EMAIL_ADDRESS', P.role_email(rng, domain))}</p>"
            f'<h2>{escape(T["staff"])}</h2><table class="staff">{"".join(rows)}</table>'
            f"<h2>{escape(T['bank'])}</h2><p>IBAN: {c.add('IBAN_CODE', P.iban(rng, rng.choice(IBAN_COUNTRY[lang])))}<br>BIC: {rng.choice(['COBADEFFXXX', 'BNPAFRPPXXX', 'CAIXESBBXXX', 'NWBKGB2L'])}</p>"
            f"<p>{escape(T['bank_note'])} ({c.nope('ORDER_NUMBER', P.order_number(rng))})</p>"
            f"<p>{escape(L[lang]['updated'])}: {c.nope('DATE', dfmt(date))} · Website v{c.nope('VERSION', P.version(rng).lstrip('v'))}</p>"
        )
        title = f"{L[lang]['contact']} – {company}"
        url = f"https://www.{domain}/{slugify(L[lang]['contact'])}/"
    elif style == "order":
        shop = rng.choice(
            {
                "en": ["gadgetbox-store.example", "bookbarn-online.example"],
                "de": ["shop-nordlicht.example", "buecherkiste24.example"],
                "fr": ["la-boutique-en-ligne.example"],
                "es": ["tienda-online.example"],
            }[lang]
        )
        f, surname = P.person(rng, lang)
        style_p = rng.randrange(12)
        values = [P.price_value(rng, 12, 90) for _ in range(3)]
        items = "".join(
            f"<tr><td>{escape(t)}</td><td>ISBN {c.nope('ISBN', P.isbn13(rng))}</td><td>{c.nope('PRICE', P.fmt_price(v, lang, style_p))}</td></tr>"
            for t, v in zip(rng.sample(BOOKS, 3), values, strict=False)
        )
        total = P.fmt_price(round(sum(values), 2), lang, style_p)
        main = (
            f"<p>{escape(f)} {escape(surname)},</p><p>{escape(T['order_intro'])}</p>"
            f"<p><b>{escape(T['order'])}</b> {c.nope('ORDER_NUMBER', P.order_number(rng))} · <b>{escape(T['date'])}</b> {c.nope('DATE', dfmt(date))}</p>"
            f'<table class="items">{items}</table><p><b>{escape(T["total"])}</b>: {c.nope("PRICE", total)}</p>'
            f"<p>{escape(T['paid_with'])}: {c.add('CREDIT_CARD', rng.choice(P.TEST_CARDS) if rng.random() < 0.4 else P.card_number(rng))} "
            f"(exp. {rng.randint(1, 12):02d}/{rng.randint(27, 31)})</p>"
            f"<p>{escape(T['tracking'])}: {c.nope('CARD_LIKE', P.card_like_invalid(rng))}<br>{escape(T['txn'])}: {c.nope('UUID', P.uuid_value(rng))}</p>"
            f"<p>{escape(T['email'])}: {c.add('EMAIL_ADDRESS', P.email(rng, lang, f, surname))} · {escape(T['phone'])}: {c.add('PHONE_NUMBER', P.phone(rng, country()))}</p>"
        )
        title = f"{T['order']} – {shop.split('.')[0]}"
        url = f"https://{shop}/account/orders/view/{rng.randint(10**5, 10**7)}?lang={lang}"
    elif style == "forum":
        site = rng.choice(
            [s for s in SITES if s.lang == lang and s.theme == "forum"] or [s for s in SITES if s.theme == "forum"]
        )
        lines = []
        for _ in range(rng.randint(5, 9)):
            ip = P.ipv4(rng) if rng.random() < 0.75 else P.ipv6(rng)
            lines.append(
                f"{ip} - - [{date.strftime('%d/%b/%Y')}:{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} +0000] "
                f'"{rng.choice(["GET /wp-login.php", "POST /xmlrpc.php", "GET /.env", "GET /phpmyadmin/"])} HTTP/1.1" {rng.choice([200, 404, 403])} {rng.randint(100, 9000)}'
            )
        for ln in lines:
            c.add("IP_ADDRESS", ln.split(" ", 1)[0])
        f, surname = P.person(rng, lang)
        versions = [P.version(rng) for _ in range(3)]
        for v in versions:
            c.nope("VERSION", v)
        main = (
            f"<p>{escape(T['forum_intro'])}</p><pre>{escape(chr(10).join(lines))}</pre>"
            f"<ul><li>nginx {escape(versions[0])}</li><li>PHP {escape(versions[1])}</li><li>WordPress {escape(versions[2])}</li></ul>"
            f"<p>{escape(T['date'])}: {c.nope('DATE', dfmt(date))}. {escape(T['email'])}: {c.add('EMAIL_ADDRESS', P.email(rng, lang, f, surname))}</p>"
        )
        title = {
            "en": "Server hammered by strange requests – hacked?",
            "de": "Server wird mit seltsamen Anfragen bombardiert – gehackt?",
            "fr": "Serveur bombardé de requêtes bizarres – piraté ?",
            "es": "Servidor saturado de peticiones raras, ¿hackeado?",
        }[lang]
        url = site.url(rng, title, date)
    elif style == "books":
        site = rng.choice([s for s in SITES if s.lang == lang and s.theme == "wpblog"])
        f, surname = P.person(rng, lang)
        items = "".join(
            f"<li><b>{escape(t)}</b> – ISBN {c.nope('ISBN', P.isbn13(rng) if rng.random() < 0.6 else P.isbn10(rng))}, "
            f"{c.nope('PRICE', P.price(rng, lang, 12, 90))}</li>"
            for t in rng.sample(BOOKS, rng.randint(4, 7))
        )
        main = (
            f"<p>{escape(T['book_intro'])}</p><ol>{items}</ol>"
            f"<p>{T['author_contact'].format(email=c.add('EMAIL_ADDRESS', P.email(rng, lang, f, surname)), phone=c.add('PHONE_NUMBER', P.phone(rng, country())))}</p>"
        )
        title = {
            "en": "Books every sysadmin should read",
            "de": "Bücher, die jeder Admin lesen sollte",
            "fr": "Les livres que tout administrateur système devrait lire",
            "es": "Libros que todo administrador de sistemas debería leer",
        }[lang]
        url = site.url(rng, title, date)
    elif style == "paste":
        rows = ["id;name;email;phone;card;iban;order;created"]
        for i in range(rng.randint(6, 14)):
            f, surname = P.person(rng, lang)
            card = P.card_number(rng) if rng.random() < 0.7 else P.card_like_invalid(rng)
            card_ok = P.luhn_valid(card)
            rows.append(
                ";".join(
                    [
                        str(1000 + i),
                        f"{f} {surname}",
                        c.add("EMAIL_ADDRESS", P.email(rng, lang, f, surname)),
                        c.add("PHONE_NUMBER", P.phone(rng, country())),
                        c.add("CREDIT_CARD", card) if card_ok else c.nope("CARD_LIKE", card),
                        c.add("IBAN_CODE", P.iban(rng, rng.choice(IBAN_COUNTRY[lang]))),
                        c.nope("ORDER_NUMBER", P.order_number(rng)),
                        c.nope("DATE", date.isoformat()),
                    ]
                )
            )
        main = f'<p>{escape(T["paste_intro"])}</p><pre class="paste">{chr(10).join(rows)}</pre>'
        # rows were escaped cell by cell; the joined text contains no markup
        title = f"Paste #{rng.randint(10**6, 10**7)} – {T['paste_intro']}"
        url = f"https://pastes.dumpzone.example/raw/{''.join(rng.choice('abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789') for _ in range(8))}"
    elif style == "ticket":
        site = SITES[8] if lang == "en" else rng.choice([s for s in SITES if s.lang == lang])
        f, surname = P.person(rng, lang)
        main = (
            f"<p>{escape(T['ticket_intro'])}</p><ul>"
            f"<li>Agent {c.nope('VERSION', P.version(rng))}, OS build {c.nope('VERSION', P.version(rng))}</li>"
            f"<li>Host IP {c.add('IP_ADDRESS', P.ipv4(rng))}, IPv6 {c.add('IP_ADDRESS', P.ipv6(rng))}</li>"
            f"<li>Request ID {c.nope('UUID', P.uuid_value(rng))}</li><li>Invoice {c.nope('ORDER_NUMBER', P.order_number(rng))} ({c.nope('PRICE', P.price(rng, lang))})</li>"
            f"<li>{escape(T['date'])}: {c.nope('DATE', dfmt(date))}</li></ul>"
            f"<p>{escape(f)} {escape(surname)} · {c.add('EMAIL_ADDRESS', P.email(rng, lang, f, surname))} · {c.add('PHONE_NUMBER', P.phone(rng, country()))}</p>"
        )
        title = {
            "en": "Dashboard shows no data after agent upgrade",
            "de": "Dashboard zeigt nach Agent-Update keine Daten",
            "fr": "Le tableau de bord n’affiche plus rien après la mise à jour",
            "es": "El panel no muestra datos tras actualizar el agente",
        }[lang]
        url = f"https://{site.domain}/support/tickets/{rng.randint(10**4, 10**6)}"
    else:
        raise ValueError(style)
    return url, title, main, site, c


# ================================================================= error pages and redirects

NGINX_ERR = "<html>\r\n<head><title>{code} {reason}</title></head>\r\n<body>\r\n<center><h1>{code} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
APACHE_ERR = (
    '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>{code} {reason}</title>\n</head><body>\n<h1>{reason}</h1>\n'
    "<p>{msg}</p>\n<hr>\n<address>Apache/2.4.57 (Debian) Server at {host} Port 443</address>\n</body></html>\n"
)
APACHE_MSG = {
    404: "The requested URL was not found on this server.",
    403: "You don't have permission to access this resource.",
    500: "The server encountered an internal error or misconfiguration and was unable to complete your request.",
    410: "The requested resource is no longer available on this server and there is no forwarding address. Please remove all references to this resource.",
    503: "The server is temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again later.",
    301: 'The document has moved <a href="{loc}">here</a>.',
    302: 'The document has moved <a href="{loc}">here</a>.',
}
REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    403: "Forbidden",
    404: "Not Found",
    410: "Gone",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def error_body(style: str, code: int, host: str, site: Site | None, rng: random.Random, date: dt.date) -> str:
    if style == "nginx":
        return NGINX_ERR.format(code=code, reason=REASONS[code])
    if style == "apache":
        return APACHE_ERR.format(code=code, reason=REASONS[code], msg=APACHE_MSG[code], host=host)
    lab = L[site.lang]
    msg = {
        "en": "Sorry, the page you are looking for does not exist or has been moved.",
        "de": "Die angeforderte Seite existiert leider nicht oder wurde verschoben.",
        "fr": "Désolé, la page que vous recherchez n’existe pas ou a été déplacée.",
        "es": "Lo sentimos, la página que buscas no existe o ha sido movida.",
        "ja": "お探しのページは見つかりませんでした。移動または削除された可能性があります。",
        "zh": "抱歉，您访问的页面不存在或已被删除。",
        "ru": "К сожалению, запрошенная страница не найдена или была перемещена.",
    }[site.lang]
    main = (
        f'<div class="error-404"><p class="big">404</p><p>{escape(msg)}</p><form action="/"><input name="s" placeholder="{escape(lab["search"])}"></form>'
        f"<h2>{escape(lab['recent'])}</h2><ul>"
        + "".join(
            f'<li><a href="/{slugify(h, rng)}/">{escape(h)}</a></li>' for h in rng.sample(HEADLINES[site.lang], 5)
        )
        + "</ul></div>"
    )
    return render(site, f"404 – {msg.split(',')[0].split('。')[0]}", main, date, rng, kind="listing", n_comments=0)


def redirect_body(style: str, code: int, loc: str, host: str) -> str:
    if style == "nginx":
        return NGINX_ERR.format(code=code, reason=REASONS[code])
    if style == "apache":
        return APACHE_ERR.format(
            code=code,
            reason=REASONS[code],
            msg=APACHE_MSG.get(code, APACHE_MSG[301]).format(loc=escape(loc)),
            host=host,
        )
    return ""


# ================================================================= non-HTML bodies


def png_bytes(rng: random.Random, w: int = 16, h: int = 16) -> bytes:
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    r0, g0, b0 = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    raw = b"".join(
        b"\x00" + b"".join(bytes(((r0 + x * 8) % 256, (g0 + y * 8) % 256, b0)) for x in range(w)) for y in range(h)
    )
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def jpeg_bytes(rng: random.Random, w: int = 48, h: int = 32) -> bytes:
    from PIL import Image  # generator-time dependency only (pip install pillow)

    img = Image.new("RGB", (w, h))
    base = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
    img.putdata(
        [
            ((base[0] + x * 5) % 256, (base[1] + y * 7) % 256, (base[2] + x * y) % 256)
            for y in range(h)
            for x in range(w)
        ]
    )
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=80)
    return buf.getvalue()


GIF_PIXEL = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")


def pdf_bytes(title: str, lines: list[str]) -> bytes:
    """A minimal but valid PDF 1.4 with one page of text (correct xref offsets)."""

    def esc(s):
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    text = (
        "BT /F1 18 Tf 72 740 Td ("
        + esc(title)
        + ") Tj ET\n"
        + "".join(f"BT /F1 11 Tf 72 {710 - 16 * i} Td ({esc(s)}) Tj ET\n" for i, s in enumerate(lines))
    )
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(text.encode('latin-1'))} >>\nstream\n{text}endstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({esc(title)}) /Producer (curate-pipeline sample generator) >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{o}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{off:010d} 00000 n \n" for off in offsets).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def robots_txt(rng: random.Random, host: str) -> str:
    lines = ["User-agent: *"]
    for p in rng.sample(
        ["/wp-admin/", "/cgi-bin/", "/search", "/tmp/", "/private/", "/cart/", "/account/", "/*?replytocom=", "/api/"],
        rng.randint(2, 5),
    ):
        lines.append(f"Disallow: {p}")
    if rng.random() < 0.5:
        lines.append("Allow: /wp-admin/admin-ajax.php")
    if rng.random() < 0.4:
        lines += [
            "",
            "User-agent: GPTBot",
            "Disallow: /",
            "",
            "User-agent: CCBot",
            f"Crawl-delay: {rng.randint(1, 10)}",
        ]
    lines += ["", f"Sitemap: https://{host}/sitemap.xml"]
    return "\n".join(lines) + "\n"


def sitemap_xml(rng: random.Random, host: str, date: dt.date) -> str:
    urls = "".join(
        f"  <url>\n    <loc>https://{host}/{slugify(t, rng)}/</loc>\n    <lastmod>{(date - dt.timedelta(days=rng.randint(0, 700))).isoformat()}</lastmod>\n"
        f"    <changefreq>{rng.choice(['daily', 'weekly', 'monthly'])}</changefreq>\n  </url>\n"
        for t in rng.sample(HEADLINES["en"], 8)
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n'


def json_api(rng: random.Random, host: str, date: dt.date) -> str:
    posts = [
        {
            "id": rng.randint(100, 99999),
            "date": (date - dt.timedelta(days=rng.randint(0, 300))).isoformat() + "T10:00:00",
            "slug": slugify(t, rng),
            "link": f"https://{host}/{slugify(t, rng)}/",
            "title": {"rendered": t},
            "excerpt": {"rendered": f"<p>{t}. {rng.choice(COMMENTS_EN)}</p>"},
            "author": rng.randint(1, 9),
            "categories": [rng.randint(1, 40)],
            "tags": rng.sample(range(1, 200), 3),
        }
        for t in rng.sample(HEADLINES["en"], 4)
    ]
    return json.dumps(posts, ensure_ascii=False, indent=None)


COMMENTS_EN = [
    "Read the full tutorial on our blog.",
    "Step-by-step guide with examples.",
    "Updated for the latest release.",
]


def manifest_json(site_name: str) -> str:
    return json.dumps(
        {
            "name": site_name,
            "short_name": site_name.split()[0],
            "start_url": "/",
            "display": "standalone",
            "background_color": "#ffffff",
            "theme_color": "#1e73be",
            "icons": [{"src": "/icons/icon-192.png", "sizes": "192x192", "type": "image/png"}],
        },
        indent=2,
    )


def rss_feed(site: Site, rng: random.Random, date: dt.date) -> str:
    items = "".join(
        f"<item><title>{escape(t)}</title><link>https://{site.domain}/{slugify(t, rng)}/</link>"
        f"<pubDate>{(date - dt.timedelta(days=i * 3)).strftime('%a, %d %b %Y')} 08:00:00 +0000</pubDate>"
        f"<dc:creator><![CDATA[{rng.choice(NICKS)}]]></dc:creator><category><![CDATA[{rng.choice(CATEGORIES[site.lang])}]]></category></item>\n"
        for i, t in enumerate(rng.sample(HEADLINES[site.lang], 5))
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>'
        f"<title>{escape(site.name)}</title><link>https://{site.domain}</link><description>{escape(site.tagline)}</description>"
        f"<language>{site.lang}</language>\n{items}</channel></rss>\n"
    )


def soft404(site: Site, rng: random.Random, date: dt.date) -> str:
    return error_body("site", 404, site.domain, site, rng, date)


def login_page(site: Site, rng: random.Random, date: dt.date) -> tuple[str, str, str]:
    lab = L[site.lang]
    main = (
        f'<form class="login" method="post" action="/login"><label>{escape(lab["email"] if "email" in lab else "E-mail")}</label><input type="email" name="user">'
        f'<label>Password</label><input type="password" name="pass"><button type="submit">{escape(lab["login"])}</button></form>'
        f'<p><a href="/lost-password">?</a> · <a href="/register">{escape(lab["register"])}</a></p>'
    )
    return (
        f"https://{site.domain}/login?redirect_to=%2Fdashboard%2F",
        lab["login"],
        render(site, lab["login"], main, date, rng, kind="listing", n_comments=0),
    )
