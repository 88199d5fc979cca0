"""PII and PII look-alikes inside ordinary sentences, in en, de, fr and es.

Used by make_samples.py for the prose pages with planted PII (news, forum
posts, blog posts, contact pages) and by tests/fixtures/pii/make_cases.py for
the look-alike test set.  ``sentence(rng, lang, typ)`` returns one sentence and
the verbatim value it carries; every value is made here from a caller's
random.Random, and none belongs to a real person (see pii.py for the ranges).

Look-alikes are what a PII detector must leave alone: ISBNs, versions,
order/invoice and tracking numbers, dates and times, prices, coordinates,
sports scores and statistics, hex hashes, UUIDs, product barcodes, and card-shaped
numbers that fail the Luhn check.
"""

from __future__ import annotations

import datetime as dt
import random
import string

from . import pii as P
from .sites import fmt_date

PII_TYPES = ("EMAIL_ADDRESS", "PHONE_NUMBER", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "URL_CREDENTIALS")
LOOKALIKE_TYPES = (
    "ISBN",
    "VERSION",
    "ORDER_NUMBER",
    "TRACKING_NUMBER",
    "DATE",
    "TIME",
    "PRICE",
    "COORDINATES",
    "SPORTS_SCORE",
    "STATISTIC",
    "HEX_HASH",
    "UUID",
    "CARD_LIKE",
    "PRODUCT_CODE",
)
COUNTRY = {"en": ["US", "GB", "AU", "IN"], "de": ["DE"], "fr": ["FR"], "es": ["ES", "MX"]}
IBAN_COUNTRY = {"en": ["GB", "NL", "BE", "CH"], "de": ["DE", "AT", "CH"], "fr": ["FR", "BE"], "es": ["ES", "IT"]}
HOSTS = [
    "git.example.com",
    "ftp.example.org",
    "db.internal.example",
    "backup.example.net",
    "nas.example.de",
    "repo.example.fr",
]
USERS = ["deploy", "admin", "backup", "jdoe", "svc-ci", "webmaster", "marta", "lukas"]


def _d(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


# ---------------------------------------------------------------- values: PII


def ssn(rng: random.Random) -> str:
    """The SSA's advertising range 987-65-4320..4329 (never issued), minus presidio's published placeholder 987-65-4320."""
    last = f"432{rng.randint(1, 9)}"
    return rng.choice([f"987-65-{last}", f"987 65 {last}", f"987.65.{last}"])


def url_credentials(rng: random.Random) -> tuple[str, str]:
    """(the whole URL, its user:password part)."""
    pw = "".join(rng.choice(string.ascii_letters + string.digits + "-_.!$*") for _ in range(rng.randint(8, 16)))
    user = rng.choice(USERS)
    scheme = rng.choice(["https", "ftp", "postgres", "mysql", "redis", "sftp"])
    path = {"postgres": "/shop", "mysql": "/wp", "redis": "/0"}.get(
        scheme, rng.choice(["/repo.git", "/backups/", "/", "/export/data.csv"])
    )
    return f"{scheme}://{user}:{pw}@{rng.choice(HOSTS)}{path}", f"{user}:{pw}"


def pii_value(rng: random.Random, lang: str, typ: str) -> str:
    if typ == "EMAIL_ADDRESS":
        return P.email(rng, lang)
    if typ == "PHONE_NUMBER":
        return P.phone(rng, rng.choice(COUNTRY[lang]))
    if typ == "IP_ADDRESS":
        return P.ipv4(rng) if rng.random() < 0.7 else P.ipv6(rng)
    if typ == "CREDIT_CARD":
        return rng.choice(P.TEST_CARDS) if rng.random() < 0.3 else P.card_number(rng)
    if typ == "IBAN_CODE":
        return P.iban(rng, rng.choice(IBAN_COUNTRY[lang]))
    if typ == "US_SSN":
        return ssn(rng)
    raise ValueError(typ)


# ---------------------------------------------------------------- values: look-alikes


def time_value(rng: random.Random, lang: str) -> str:
    h, m, s = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
    if lang == "en":
        return rng.choice(
            [f"{h:02d}:{m:02d}", f"{h:02d}:{m:02d}:{s:02d}", f"{(h % 12) or 12}:{m:02d} {'pm' if h >= 12 else 'am'}"]
        )
    if lang == "fr":
        return rng.choice([f"{h}h{m:02d}", f"{h:02d}:{m:02d}", f"{h} h {m:02d}"])
    return rng.choice([f"{h:02d}:{m:02d}", f"{h:02d}:{m:02d}:{s:02d}", f"{h}.{m:02d}"])


def coordinates(rng: random.Random) -> str:
    lat, lon = rng.uniform(-60, 70), rng.uniform(-170, 170)
    style = rng.randrange(4)
    if style == 0:
        return f"{lat:.4f}, {lon:.4f}"
    if style == 1:
        return f"{abs(lat):.4f}° {'N' if lat >= 0 else 'S'}, {abs(lon):.4f}° {'E' if lon >= 0 else 'W'}"
    if style == 2:
        d, m = int(abs(lat)), (abs(lat) % 1) * 60
        e, n = int(abs(lon)), (abs(lon) % 1) * 60
        return f"{d}°{int(m):02d}′{int((m % 1) * 60):02d}″{'N' if lat >= 0 else 'S'} {e}°{int(n):02d}′{int((n % 1) * 60):02d}″{'E' if lon >= 0 else 'W'}"
    return f"{lat:.6f},{lon:.6f}"


def sports_score(rng: random.Random) -> str:
    style = rng.randrange(5)
    if style == 0:  # tennis, three or five sets
        sets = [
            rng.choice(["6-4", "6-3", "7-5", "4-6", "7-6", "6-2", "3-6", "6-7"]) for _ in range(rng.choice([3, 3, 5]))
        ]
        return " ".join(sets)
    if style == 1:  # basketball
        a = rng.randint(85, 130)
        return f"{a}-{a - rng.randint(1, 20)}"
    if style == 2:  # football, with penalties
        return f"{rng.randint(0, 3)}-{rng.randint(0, 3)} ({rng.randint(3, 5)}-{rng.randint(2, 4)} pens)"
    if style == 3:  # volleyball / badminton sets
        return ", ".join(f"{rng.choice([21, 25])}-{rng.randint(10, 23)}" for _ in range(3))
    return f"{rng.randint(2, 9)}-{rng.randint(0, 9)}"


def statistic(rng: random.Random) -> str:
    style = rng.randrange(5)
    if style == 0:  # baseball slash line
        return f".{rng.randint(230, 340)}/.{rng.randint(290, 420)}/.{rng.randint(350, 620)}"
    if style == 1:  # win-loss(-draw) record
        return f"{rng.randint(10, 60)}-{rng.randint(5, 40)}-{rng.randint(0, 9)}"
    if style == 2:  # cricket innings
        return f"{rng.randint(150, 420)}/{rng.randint(2, 10)} in {rng.randint(20, 50)} overs"
    if style == 3:  # a count with thousands separators
        return f"{rng.randint(1, 9)},{rng.randint(100, 999)},{rng.randint(100, 999)}"
    return (
        f"{rng.randint(1, 12)} {rng.randint(100, 999)} {rng.randint(100, 999)}"  # French/German thousands with spaces
    )


def hex_hash(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice([7, 12, 32, 40, 64])))


def tracking_number(rng: random.Random) -> str:
    return rng.choice(
        [
            "1Z" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(6)) + _d(rng, 10),  # UPS
            f"94{_d(rng, 2)} {_d(rng, 4)} {_d(rng, 4)} {_d(rng, 4)} {_d(rng, 4)} {_d(rng, 2)}",  # USPS
            f"00340{_d(rng, 15)}",  # DHL parcel
            f"JJD{_d(rng, 18)}",  # DHL Express
            f"{_d(rng, 4)} {_d(rng, 4)} {_d(rng, 4)}",  # FedEx 12 digits
            f"LX{_d(rng, 9)}FR",  # La Poste / UPU S10
        ]
    )


def ean13(rng: random.Random) -> str:
    d12 = rng.choice(["400", "401", "590", "760", "841", "050"]) + _d(rng, 9)
    return d12 + P.isbn13_check(d12)  # EAN-13 and ISBN-13 share the check digit


def lookalike_value(rng: random.Random, lang: str, typ: str) -> str:
    if typ == "ISBN":
        return P.isbn13(rng) if rng.random() < 0.6 else P.isbn10(rng)
    if typ == "VERSION":
        return rng.choice(
            [P.version(rng), f"{rng.randint(1, 9)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 200)}"]
        )
    if typ == "ORDER_NUMBER":
        return P.order_number(rng)
    if typ == "TRACKING_NUMBER":
        return tracking_number(rng)
    if typ == "DATE":
        return fmt_date(dt.date(2015, 1, 1) + dt.timedelta(days=rng.randint(0, 4000)), lang, rng.randint(0, 3))
    if typ == "TIME":
        return time_value(rng, lang)
    if typ == "PRICE":
        return P.price(rng, lang)
    if typ == "COORDINATES":
        return coordinates(rng)
    if typ == "SPORTS_SCORE":
        return sports_score(rng)
    if typ == "STATISTIC":
        return statistic(rng)
    if typ == "HEX_HASH":
        return hex_hash(rng)
    if typ == "UUID":
        return P.uuid_value(rng)
    if typ == "CARD_LIKE":
        return P.card_like_invalid(rng)
    if typ == "PRODUCT_CODE":
        return ean13(rng)
    raise ValueError(typ)


# ---------------------------------------------------------------- sentences

S = {
    "en": {
        "EMAIL_ADDRESS": [
            "If you spot a mistake in this article, write to {v} and we will correct it.",
            "Questions about the meetup can go to {v}, the organiser reads every message.",
            "The maintainer, reachable at {v}, asked users to test the patch before Friday.",
        ],
        "PHONE_NUMBER": [
            "For urgent problems you can call the on-call engineer on {v} at any hour.",
            "The ticket office answers the phone at {v} on weekdays.",
            "Readers who want to share a tip can reach the newsroom on {v}.",
            "Her mobile number, {v}, was printed on the flyer by mistake.",
        ],
        "IP_ADDRESS": [
            "Most of the failed logins came from {v} during the night.",
            "After the move the database server answers on {v} instead of the old address.",
            "The firewall now blocks {v}, which kept scanning our ports.",
        ],
        "CREDIT_CARD": [
            "I paid with my Visa card {v} and was charged twice for the same ticket.",
            "The screenshot in the bug report showed the full card number {v}.",
            "She read the card number {v} aloud to the agent over the phone.",
        ],
        "IBAN_CODE": [
            "Donations are welcome by bank transfer to {v}, quoting the word support.",
            "The club collects the yearly fee from the account {v} in March.",
            "Refunds are paid back to the IBAN {v} given on the order form.",
        ],
        "US_SSN": [
            "The leaked spreadsheet even listed his social security number, {v}.",
            "Never send a form with your SSN {v} by unencrypted e-mail.",
            "The clerk typed the social security number {v} into the wrong field.",
        ],
        "URL_CREDENTIALS": [
            "The old deploy script still fetched its data from {url} every night.",
            "Someone committed the line {url} to the public repository.",
            "The backup job was configured with {url} and nobody noticed for months.",
        ],
        "ISBN": [
            "The second edition (ISBN {v}) adds a long chapter on containers.",
            "Ask your bookshop for ISBN {v}; the paperback is still in print.",
        ],
        "VERSION": [
            "We upgraded to version {v} last week and the crashes stopped.",
            "The bug is fixed in release {v}, so update as soon as you can.",
            "Firmware {v} finally adds support for the new sensor.",
        ],
        "ORDER_NUMBER": [
            "Your order {v} has been received and will ship soon.",
            "Please quote invoice {v} when you pay the balance.",
            "Reference {v} refers to the delivery from March.",
        ],
        "TRACKING_NUMBER": [
            "The parcel left the depot under tracking number {v} this morning.",
            "The courier website shows shipment {v} as delivered.",
        ],
        "DATE": ["The meeting was moved to {v} because of the holiday.", "Registration for the course closes on {v}."],
        "TIME": [
            "Doors open at {v} and the first talk starts shortly after.",
            "The outage began at {v} and lasted for almost an hour.",
        ],
        "PRICE": [
            "The starter kit costs {v} including tax and shipping.",
            "Tickets went on sale for {v} and sold out within a day.",
        ],
        "COORDINATES": [
            "The summit sits at {v}, just above the tree line.",
            "Meet us at {v}, near the old bridge over the river.",
        ],
        "SPORTS_SCORE": [
            "The home side won {v} after a tense second half.",
            "She took the final {v} and lifted her first trophy.",
            "The rivals drew the first leg, and the return match ended {v}.",
        ],
        "STATISTIC": [
            "He finished the season with a line of {v}, his best in years.",
            "The team went {v} this year, which was enough for the playoffs.",
            "The stadium has welcomed {v} visitors since it opened.",
        ],
        "HEX_HASH": [
            "The release tarball has the checksum {v}, so verify it before installing.",
            "The regression came in with commit {v} according to the bisect.",
        ],
        "UUID": [
            "The failing request had the ID {v} in the server log.",
            "Each device reports its identifier, for example {v}, to the dashboard.",
        ],
        "CARD_LIKE": [
            "Your loyalty card number is {v}, keep it for future visits.",
            "The voucher code {v} is printed on the back of the receipt.",
        ],
        "PRODUCT_CODE": [
            "Scan the barcode {v} at the till to get the discount.",
            "The shelf label shows the article code {v} next to the price.",
        ],
    },
    "de": {
        "EMAIL_ADDRESS": [
            "Wer einen Fehler in diesem Artikel findet, schreibt bitte an {v}, wir korrigieren ihn.",
            "Fragen zum Treffen beantwortet die Organisatorin unter {v}.",
            "Der Betreuer des Pakets, erreichbar unter {v}, bittet um Tests vor Freitag.",
        ],
        "PHONE_NUMBER": [
            "Bei dringenden Problemen erreichen Sie den Bereitschaftsdienst jederzeit unter der Telefonnummer {v}.",
            "Die Vorverkaufsstelle ist werktags telefonisch unter {v} zu erreichen.",
            "Hinweise nimmt die Redaktion auch telefonisch unter {v} entgegen.",
            "Seine Handynummer {v} stand versehentlich auf dem Aushang.",
        ],
        "IP_ADDRESS": [
            "Die meisten fehlgeschlagenen Anmeldungen kamen nachts von {v}.",
            "Nach dem Umzug antwortet der Datenbankserver unter {v} statt unter der alten Adresse.",
            "Die Firewall sperrt jetzt {v}, weil von dort ständig Ports gescannt wurden.",
        ],
        "CREDIT_CARD": [
            "Ich habe mit meiner Kreditkarte {v} bezahlt und wurde zweimal belastet.",
            "Auf dem Screenshot im Fehlerbericht war die vollständige Kartennummer {v} zu sehen.",
            "Sie hat die Kartennummer {v} am Telefon laut vorgelesen.",
        ],
        "IBAN_CODE": [
            "Spenden sind per Überweisung auf das Konto {v} willkommen, Verwendungszweck Förderung.",
            "Der Verein zieht den Jahresbeitrag im März vom Konto {v} ein.",
            "Erstattungen gehen an die IBAN {v}, die im Bestellformular angegeben wurde.",
        ],
        "URL_CREDENTIALS": [
            "Das alte Skript holte seine Daten jede Nacht von {url} ab.",
            "Jemand hat die Zeile {url} in das öffentliche Repository eingecheckt.",
            "Die Sicherung war monatelang mit {url} eingerichtet, ohne dass es jemand bemerkte.",
        ],
        "ISBN": [
            "Die zweite Auflage (ISBN {v}) enthält ein neues Kapitel über Container.",
            "Fragen Sie im Buchhandel nach der ISBN {v}, das Taschenbuch ist noch lieferbar.",
        ],
        "VERSION": [
            "Seit dem Update auf Version {v} in der letzten Woche gibt es keine Abstürze mehr.",
            "Der Fehler ist in Release {v} behoben, also bitte bald aktualisieren.",
            "Die Firmware {v} unterstützt endlich den neuen Sensor.",
        ],
        "ORDER_NUMBER": [
            "Ihre Bestellung {v} ist eingegangen und wird in Kürze versandt.",
            "Bitte geben Sie bei der Zahlung die Rechnungsnummer {v} an.",
            "Der Vorgang {v} betrifft die Lieferung aus dem März.",
        ],
        "TRACKING_NUMBER": [
            "Das Paket hat das Lager heute früh mit der Sendungsnummer {v} verlassen.",
            "Laut Website des Paketdienstes wurde die Sendung {v} zugestellt.",
        ],
        "DATE": [
            "Das Treffen wurde wegen des Feiertags auf den {v} verschoben.",
            "Die Anmeldung für den Kurs endet am {v}.",
        ],
        "TIME": [
            "Einlass ist um {v} Uhr, der erste Vortrag beginnt kurz danach.",
            "Die Störung begann um {v} Uhr und dauerte fast eine Stunde.",
        ],
        "PRICE": [
            "Das Einsteigerset kostet {v} inklusive Versand.",
            "Die Karten gingen für {v} in den Verkauf und waren nach einem Tag weg.",
        ],
        "COORDINATES": [
            "Der Gipfel liegt bei {v}, knapp oberhalb der Baumgrenze.",
            "Treffpunkt ist bei {v}, nahe der alten Brücke über den Fluss.",
        ],
        "SPORTS_SCORE": [
            "Die Gastgeber gewannen nach einer spannenden zweiten Halbzeit mit {v}.",
            "Sie gewann das Finale mit {v} und holte ihren ersten Titel.",
            "Das Hinspiel endete unentschieden, das Rückspiel ging {v} aus.",
        ],
        "STATISTIC": [
            "Die Mannschaft beendete die Saison mit einer Bilanz von {v}.",
            "Das Stadion hat seit der Eröffnung {v} Besucher gezählt.",
            "In der Statistik steht am Ende eine Quote von {v}, so gut war er seit Jahren nicht.",
        ],
        "HEX_HASH": [
            "Das Archiv hat die Prüfsumme {v}, bitte vor der Installation vergleichen.",
            "Laut Bisect kam der Fehler mit dem Commit {v} hinein.",
        ],
        "UUID": [
            "Die fehlgeschlagene Anfrage hatte im Serverprotokoll die Kennung {v}.",
            "Jedes Gerät meldet seine Kennung, zum Beispiel {v}, an das Dashboard.",
        ],
        "CARD_LIKE": [
            "Ihre Kundenkartennummer lautet {v}, bitte bewahren Sie sie auf.",
            "Der Gutscheincode {v} steht auf der Rückseite des Kassenbons.",
        ],
        "PRODUCT_CODE": [
            "Scannen Sie an der Kasse den Strichcode {v}, um den Rabatt zu erhalten.",
            "Auf dem Regaletikett steht neben dem Preis die Artikelnummer {v}.",
        ],
    },
    "fr": {
        "EMAIL_ADDRESS": [
            "Si vous trouvez une erreur dans cet article, écrivez à {v} et nous la corrigerons.",
            "Les questions sur la rencontre peuvent être envoyées à {v}, l’organisatrice répond à tout.",
            "Le mainteneur, joignable à l’adresse {v}, demande de tester le correctif avant vendredi.",
        ],
        "PHONE_NUMBER": [
            "En cas d’urgence, le technicien d’astreinte répond au téléphone au {v} à toute heure.",
            "La billetterie est joignable par téléphone au {v} en semaine.",
            "Les lecteurs qui ont une information peuvent appeler la rédaction au {v}.",
            "Son numéro de portable, le {v}, figurait par erreur sur l’affiche.",
        ],
        "IP_ADDRESS": [
            "La plupart des connexions échouées venaient de {v} pendant la nuit.",
            "Depuis le déménagement, le serveur de base de données répond sur {v} et non plus sur l’ancienne adresse.",
            "Le pare-feu bloque désormais {v}, qui scannait nos ports sans arrêt.",
        ],
        "CREDIT_CARD": [
            "J’ai payé avec ma carte bancaire {v} et j’ai été débité deux fois.",
            "La capture d’écran du rapport de bogue montrait le numéro de carte complet {v}.",
            "Elle a lu à voix haute le numéro de carte {v} au conseiller.",
        ],
        "IBAN_CODE": [
            "Les dons sont les bienvenus par virement sur le compte {v}, avec la mention soutien.",
            "L’association prélève la cotisation annuelle sur le compte {v} en mars.",
            "Les remboursements sont versés sur l’IBAN {v} indiqué dans le bon de commande.",
        ],
        "URL_CREDENTIALS": [
            "L’ancien script récupérait chaque nuit ses données depuis {url} sans chiffrement.",
            "Quelqu’un a publié la ligne {url} dans le dépôt public.",
            "La sauvegarde était configurée avec {url} et personne ne l’a remarqué pendant des mois.",
        ],
        "ISBN": [
            "La deuxième édition (ISBN {v}) ajoute un long chapitre sur les conteneurs.",
            "Demandez à votre libraire l’ISBN {v}, le livre de poche est toujours disponible.",
        ],
        "VERSION": [
            "Depuis la mise à jour vers la version {v} la semaine dernière, les plantages ont cessé.",
            "Le bogue est corrigé dans la version {v}, mettez à jour dès que possible.",
            "Le micrologiciel {v} prend enfin en charge le nouveau capteur.",
        ],
        "ORDER_NUMBER": [
            "Votre commande {v} a bien été reçue et sera expédiée sous peu.",
            "Merci d’indiquer la facture {v} lors du paiement du solde.",
            "Le dossier {v} concerne la livraison du mois de mars.",
        ],
        "TRACKING_NUMBER": [
            "Le colis a quitté l’entrepôt ce matin avec le numéro de suivi {v}.",
            "Le site du transporteur indique que l’envoi {v} a été livré.",
        ],
        "DATE": [
            "La réunion a été déplacée au {v} à cause du jour férié.",
            "Les inscriptions au stage se terminent le {v}.",
        ],
        "TIME": [
            "Les portes ouvrent à {v} et la première conférence commence juste après.",
            "La panne a commencé à {v} et a duré presque une heure.",
        ],
        "PRICE": [
            "Le kit de démarrage coûte {v}, livraison comprise.",
            "Les billets ont été mis en vente à {v} et se sont arrachés en une journée.",
        ],
        "COORDINATES": [
            "Le sommet se trouve à {v}, juste au-dessus de la limite des arbres.",
            "Rendez-vous à {v}, près du vieux pont sur la rivière.",
        ],
        "SPORTS_SCORE": [
            "L’équipe locale s’est imposée {v} après une seconde mi-temps tendue.",
            "Elle a remporté la finale {v} et soulevé son premier trophée.",
            "Le match aller s’est soldé par un nul, le retour s’est terminé sur le score de {v}.",
        ],
        "STATISTIC": [
            "L’équipe a terminé la saison avec un bilan de {v}, de quoi viser les séries.",
            "Le stade a accueilli {v} spectateurs depuis son ouverture.",
            "Sa fiche statistique affiche {v}, son meilleur total depuis des années.",
        ],
        "HEX_HASH": [
            "L’archive a pour somme de contrôle {v}, vérifiez-la avant l’installation.",
            "D’après la bissection, la régression vient du commit {v}.",
        ],
        "UUID": [
            "La requête en échec portait l’identifiant {v} dans le journal du serveur.",
            "Chaque appareil envoie son identifiant, par exemple {v}, au tableau de bord.",
        ],
        "CARD_LIKE": [
            "Votre numéro de carte de fidélité est le {v}, conservez-le.",
            "Le code du bon d’achat {v} figure au dos du ticket de caisse.",
        ],
        "PRODUCT_CODE": [
            "Scannez le code-barres {v} en caisse pour obtenir la remise.",
            "L’étiquette du rayon affiche la référence {v} à côté du prix.",
        ],
    },
    "es": {
        "EMAIL_ADDRESS": [
            "Si encuentras un error en este artículo, escribe a {v} y lo corregiremos.",
            "Las preguntas sobre el encuentro se pueden enviar a {v}, la organizadora responde a todo.",
            "El responsable del paquete, localizable en {v}, pidió probar el parche antes del viernes.",
        ],
        "PHONE_NUMBER": [
            "Para problemas urgentes puedes llamar al teléfono de guardia {v} a cualquier hora.",
            "La taquilla atiende por teléfono en el {v} de lunes a viernes.",
            "Los lectores que quieran enviar una pista pueden llamar a la redacción al {v}.",
            "Su número de móvil, {v}, apareció por error en el cartel.",
        ],
        "IP_ADDRESS": [
            "La mayoría de los inicios de sesión fallidos llegaron desde {v} durante la noche.",
            "Tras la mudanza, el servidor de base de datos responde en {v} en lugar de la dirección antigua.",
            "El cortafuegos bloquea ahora {v}, que no dejaba de escanear nuestros puertos.",
        ],
        "CREDIT_CARD": [
            "Pagué con mi tarjeta {v} y me cobraron dos veces la misma entrada.",
            "La captura del informe de error mostraba el número de tarjeta completo {v}.",
            "Leyó en voz alta el número de tarjeta {v} al agente.",
        ],
        "IBAN_CODE": [
            "Los donativos son bienvenidos por transferencia a la cuenta {v}, con el concepto apoyo.",
            "El club cobra la cuota anual de la cuenta {v} en marzo.",
            "Los reembolsos se abonan en el IBAN {v} indicado en el pedido.",
        ],
        "URL_CREDENTIALS": [
            "El antiguo script descargaba cada noche sus datos de {url} sin cifrar.",
            "Alguien subió la línea {url} al repositorio público.",
            "La copia de seguridad estuvo meses configurada con {url} sin que nadie lo notara.",
        ],
        "ISBN": [
            "La segunda edición (ISBN {v}) añade un capítulo largo sobre contenedores.",
            "Pide en tu librería el ISBN {v}, la edición de bolsillo sigue a la venta.",
        ],
        "VERSION": [
            "Desde que actualizamos a la versión {v} la semana pasada no ha habido más cuelgues.",
            "El fallo está corregido en la versión {v}, así que actualiza cuanto antes.",
            "El firmware {v} por fin admite el nuevo sensor.",
        ],
        "ORDER_NUMBER": [
            "Tu pedido {v} se ha recibido y saldrá en breve.",
            "Indica la factura {v} al pagar el importe pendiente.",
            "El expediente {v} corresponde a la entrega de marzo.",
        ],
        "TRACKING_NUMBER": [
            "El paquete salió del almacén esta mañana con el número de seguimiento {v}.",
            "La web de la mensajería muestra el envío {v} como entregado.",
        ],
        "DATE": ["La reunión se trasladó al {v} por el día festivo.", "La inscripción al curso termina el {v}."],
        "TIME": [
            "Las puertas abren a las {v} y la primera charla empieza poco después.",
            "La caída empezó a las {v} y duró casi una hora.",
        ],
        "PRICE": [
            "El kit de inicio cuesta {v} con el envío incluido.",
            "Las entradas salieron a la venta por {v} y se agotaron en un día.",
        ],
        "COORDINATES": [
            "La cumbre está en {v}, justo por encima del límite del bosque.",
            "Quedamos en {v}, cerca del puente viejo sobre el río.",
        ],
        "SPORTS_SCORE": [
            "El equipo local ganó {v} tras una segunda parte muy tensa.",
            "Ella ganó la final {v} y levantó su primer trofeo.",
            "La ida terminó en empate y la vuelta acabó {v}.",
        ],
        "STATISTIC": [
            "El equipo cerró la temporada con un balance de {v}, suficiente para los playoffs.",
            "El estadio ha recibido {v} visitantes desde su inauguración.",
            "Su ficha estadística muestra {v}, su mejor marca en años.",
        ],
        "HEX_HASH": [
            "El archivo tiene la suma de comprobación {v}, verifícala antes de instalar.",
            "Según la bisección, la regresión llegó con el commit {v}.",
        ],
        "UUID": [
            "La petición fallida tenía el identificador {v} en el registro del servidor.",
            "Cada dispositivo envía su identificador, por ejemplo {v}, al panel.",
        ],
        "CARD_LIKE": [
            "Tu número de tarjeta de cliente es el {v}, guárdalo para la próxima visita.",
            "El código del vale {v} está impreso en el reverso del tique.",
        ],
        "PRODUCT_CODE": [
            "Escanea el código de barras {v} en caja para obtener el descuento.",
            "La etiqueta del estante muestra la referencia {v} junto al precio.",
        ],
    },
}


def types_for(lang: str) -> tuple[list[str], list[str]]:
    """(PII types, look-alike types) that have sentences in ``lang``."""
    return [t for t in PII_TYPES if t in S[lang]], [t for t in LOOKALIKE_TYPES if t in S[lang]]


def sentence(rng: random.Random, lang: str, typ: str) -> tuple[str, str]:
    """(a sentence carrying one value of ``typ``, that value verbatim)."""
    template = rng.choice(S[lang][typ])
    if typ == "URL_CREDENTIALS":
        url, value = url_credentials(rng)
        return template.format(url=url), value
    value = pii_value(rng, lang, typ) if typ in PII_TYPES else lookalike_value(rng, lang, typ)
    return template.format(v=value), value
