"""PII values and PII look-alikes, all generated from a caller-supplied random.Random.

Every value returned here is a string exactly as it is printed in a page, so the
ground truth can list it verbatim.  Nothing here belongs to a real person: phone
numbers are drawn from fictional/drama ranges where a country has one, e-mail
domains are example domains or invented ones, card numbers are well-known test
numbers or random Luhn-valid numbers.
"""

from __future__ import annotations

import random
import string
import uuid

# ---------------------------------------------------------------- checksums


def luhn_check_digit(digits: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:  # these get doubled once the check digit is appended
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def luhn_valid(number: str) -> bool:
    digits = [c for c in number if c.isdigit()]
    return luhn_check_digit("".join(digits[:-1])) == digits[-1]


def iban_check_digits(country: str, bban: str) -> str:
    rearranged = bban + country + "00"
    numeric = "".join(str(int(c, 36)) for c in rearranged)
    return f"{98 - int(numeric) % 97:02d}"


def iban_valid(iban: str) -> bool:
    s = iban.replace(" ", "")
    rearranged = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def isbn10_check(d9: str) -> str:
    s = sum((10 - i) * int(c) for i, c in enumerate(d9)) % 11
    c = (11 - s) % 11
    return "X" if c == 10 else str(c)


def isbn13_check(d12: str) -> str:
    s = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(d12))
    return str((10 - s % 10) % 10)


# ---------------------------------------------------------------- PII

TEST_CARDS = [
    "4111 1111 1111 1111",
    "5555 5555 5555 4444",
    "3782 822463 10005",
    "6011 1111 1111 1117",
    "4012888888881881",
    "5105-1051-0510-5100",
]

CARD_PREFIXES = [("4", 16), ("51", 16), ("53", 16), ("2221", 16), ("37", 15), ("6011", 16)]


def card_number(rng: random.Random) -> str:
    prefix, length = rng.choice(CARD_PREFIXES)
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    num = body + luhn_check_digit(body)
    style = rng.choice(["space", "dash", "plain"])
    if length == 15:
        groups = [num[:4], num[4:10], num[10:]]
    else:
        groups = [num[i : i + 4] for i in range(0, 16, 4)]
    return {"space": " ".join(groups), "dash": "-".join(groups), "plain": num}[style]


def card_like_invalid(rng: random.Random) -> str:
    """16 digits in card layout that FAIL the Luhn check (e.g. a tracking number)."""
    while True:
        body = rng.choice("3456") + "".join(rng.choice(string.digits) for _ in range(15))
        if not luhn_valid(body):
            break
    return " ".join(body[i : i + 4] for i in range(0, 16, 4)) if rng.random() < 0.6 else body


IBAN_FORMATS = {  # country: (bban pattern, total length) ; 9 = digit, A = upper letter, C = alnum
    "DE": "999999999999999999",
    "GB": "AAAA99999999999999",
    "FR": "9999999999CCCCCCCCCCC99",
    "ES": "99999999999999999999",
    "IT": "A9999999999CCCCCCCCCCCC",
    "NL": "AAAA9999999999",
    "AT": "9999999999999999",
    "CH": "99999CCCCCCCCCCCC",
    "BE": "999999999999",
    "PL": "999999999999999999999999",
}

KNOWN_IBANS = ["DE89 3704 0044 0532 0130 00", "GB82 WEST 1234 5698 7654 32"]


def iban(rng: random.Random, country: str | None = None) -> str:
    country = country or rng.choice(sorted(IBAN_FORMATS))
    pattern = IBAN_FORMATS[country]
    pools = {"9": string.digits, "A": string.ascii_uppercase, "C": string.digits + string.ascii_uppercase}
    bban = "".join(rng.choice(pools[p]) for p in pattern)
    full = country + iban_check_digits(country, bban) + bban
    assert iban_valid(full)
    if rng.random() < 0.7:
        return " ".join(full[i : i + 4] for i in range(0, len(full), 4))
    return full


FIRST = {
    "en": [
        "James",
        "Mary",
        "Robert",
        "Linda",
        "Michael",
        "Sarah",
        "David",
        "Karen",
        "Daniel",
        "Emily",
        "Kevin",
        "Laura",
    ],
    "de": [
        "Lukas",
        "Anna",
        "Jonas",
        "Lea",
        "Felix",
        "Marie",
        "Tobias",
        "Julia",
        "Stefan",
        "Katrin",
        "Jürgen",
        "Sabine",
    ],
    "fr": ["Julien", "Camille", "Nicolas", "Chloé", "Mathieu", "Léa", "Antoine", "Manon", "Thomas", "Élodie"],
    "es": ["Alejandro", "Lucía", "Javier", "Carmen", "Diego", "Marta", "Sergio", "Elena", "Pablo", "Laura"],
    "ja": ["太郎", "花子", "健一", "由美", "翔太", "美咲"],
    "ru": ["Алексей", "Мария", "Дмитрий", "Елена", "Сергей", "Ольга"],
}
LAST = {
    "en": ["Smith", "Johnson", "Brown", "Miller", "Davis", "Wilson", "Taylor", "Clark", "Walker", "Hughes"],
    "de": ["Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Becker", "Hoffmann", "Wagner", "Krüger"],
    "fr": ["Martin", "Bernard", "Dubois", "Moreau", "Laurent", "Lefèvre", "Girard", "Roux"],
    "es": ["García", "Fernández", "López", "Martínez", "Sánchez", "Romero", "Navarro", "Torres"],
    "ja": ["佐藤", "鈴木", "高橋", "田中", "渡辺", "伊藤"],
    "ru": ["Иванов", "Смирнова", "Кузнецов", "Попова", "Соколов", "Лебедева"],
}
ASCII_LOCAL = {
    "Müller": "mueller",
    "Krüger": "krueger",
    "Jürgen": "juergen",
    "Chloé": "chloe",
    "Élodie": "elodie",
    "Lefèvre": "lefevre",
    "Léa": "lea",
    "García": "garcia",
    "Fernández": "fernandez",
    "López": "lopez",
    "Martínez": "martinez",
    "Sánchez": "sanchez",
    "Lucía": "lucia",
}
TRANSLIT_JA = {
    "太郎": "taro",
    "花子": "hanako",
    "健一": "kenichi",
    "由美": "yumi",
    "翔太": "shota",
    "美咲": "misaki",
    "佐藤": "sato",
    "鈴木": "suzuki",
    "高橋": "takahashi",
    "田中": "tanaka",
    "渡辺": "watanabe",
    "伊藤": "ito",
}
TRANSLIT_RU = {
    "Алексей": "aleksei",
    "Мария": "maria",
    "Дмитрий": "dmitry",
    "Елена": "elena",
    "Сергей": "sergei",
    "Ольга": "olga",
    "Иванов": "ivanov",
    "Смирнова": "smirnova",
    "Кузнецов": "kuznetsov",
    "Попова": "popova",
    "Соколов": "sokolov",
    "Лебедева": "lebedeva",
}

MAIL_DOMAINS = {
    "en": ["example.com", "example.org", "mail.example.net", "fastmail-demo.com", "inbox.example.us"],
    "de": ["example.de", "posteo-demo.de", "web-mail.example.de", "firma-beispiel.de"],
    "fr": ["example.fr", "orange-demo.fr", "courriel.example.fr"],
    "es": ["example.es", "correo-demo.es", "empresa-ejemplo.com.mx"],
    "ja": ["example.jp", "mail.example.co.jp"],
    "ru": ["example.ru", "pochta-demo.ru"],
}


def person(rng: random.Random, lang: str) -> tuple[str, str]:
    lang = lang if lang in FIRST else "en"
    return rng.choice(FIRST[lang]), rng.choice(LAST[lang])


def _ascii(name: str) -> str:
    name = ASCII_LOCAL.get(name, TRANSLIT_JA.get(name, TRANSLIT_RU.get(name, name)))
    return name.lower()


def email(rng: random.Random, lang: str, first: str | None = None, last: str | None = None) -> str:
    if first is None:
        first, last = person(rng, lang)
    f, surname = _ascii(first), _ascii(last)
    local = rng.choice(
        [f"{f}.{surname}", f"{f[0]}.{surname}", f"{f}{surname[0]}", f"{surname}{rng.randint(1, 99)}", f"{f}_{surname}"]
    )
    return f"{local}@{rng.choice(MAIL_DOMAINS.get(lang, MAIL_DOMAINS['en']))}"


def role_email(rng: random.Random, domain: str) -> str:
    return f"{rng.choice(['info', 'support', 'kontakt', 'contact', 'sales', 'billing', 'privacy'])}@{domain}"


def phone(rng: random.Random, country: str) -> str:
    d = lambda n: "".join(rng.choice(string.digits) for _ in range(n))  # noqa: E731
    if country == "US":
        area = rng.choice(["212", "415", "312", "617", "206", "303"])
        n = f"01{d(2)}"  # 555-0100..0199 is reserved for fiction
        return rng.choice([f"({area}) 555-{n}", f"{area}-555-{n}", f"+1 {area} 555 {n}", f"{area}.555.{n}"])
    if country == "GB":
        n = f"0{d(3)}"  # Ofcom drama range 020 7946 0000-0999
        return rng.choice([f"020 7946 {n}", f"+44 20 7946 {n}", f"+44 (0)20 7946 {n}"])
    if country == "DE":
        return rng.choice(
            [
                f"+49 30 {d(3)} {d(4)}",
                f"030 / {d(4)} {d(3)}",
                f"(089) {d(3)} {d(2)}-{d(2)}",
                f"+49 151 {d(4)} {d(4)}",
                f"0171 {d(7)}",
            ]
        )
    if country == "FR":
        return rng.choice([f"01 99 00 {d(2)} {d(2)}", f"+33 1 99 00 {d(2)} {d(2)}", f"06 {d(2)} {d(2)} {d(2)} {d(2)}"])
    if country == "ES":
        return rng.choice([f"+34 91 {d(3)} {d(2)} {d(2)}", f"912 {d(3)} {d(3)}", f"6{d(2)} {d(3)} {d(3)}"])
    if country == "MX":
        return f"+52 55 {d(4)} {d(4)}"
    if country == "JP":
        return rng.choice([f"03-{d(4)}-{d(4)}", f"090-{d(4)}-{d(4)}", f"+81 3 {d(4)} {d(4)}"])
    if country == "RU":
        return rng.choice([f"+7 495 {d(3)}-{d(2)}-{d(2)}", f"8 (812) {d(3)}-{d(2)}-{d(2)}"])
    if country == "AU":
        return f"0491 570 {rng.choice(['006', '156', '157', '158', '159', '110'])}"  # ACMA fictional range
    if country == "IN":
        return f"+91 98{d(3)} {d(5)}"
    raise ValueError(country)


def ipv4(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:  # documentation ranges
        net = rng.choice(["192.0.2", "198.51.100", "203.0.113"])
        return f"{net}.{rng.randint(1, 254)}"
    if kind < 0.6:
        return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    first = rng.choice([31, 46, 62, 77, 81, 85, 91, 109, 141, 151, 176, 185, 193, 212, 217])
    return f"{first}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


def ipv6(rng: random.Random) -> str:
    h = lambda: f"{rng.randint(0, 0xFFFF):x}"  # noqa: E731
    if rng.random() < 0.5:
        return f"2001:db8:{h()}:{h()}::{h()}"
    return f"2a02:{h()}:{h()}:{h()}:{h()}:{h()}:{h()}:{h()}"


# ---------------------------------------------------------------- look-alikes (not PII)


def isbn10(rng: random.Random) -> str:
    d9 = rng.choice(["0", "1", "3", "2"]) + "".join(rng.choice(string.digits) for _ in range(8))
    c = isbn10_check(d9)
    return f"{d9[0]}-{d9[1:4]}-{d9[4:9]}-{c}" if rng.random() < 0.7 else d9 + c


def isbn13(rng: random.Random) -> str:
    d12 = rng.choice(["978", "979"]) + "".join(rng.choice(string.digits) for _ in range(9))
    c = isbn13_check(d12)
    return f"{d12[:3]}-{d12[3]}-{d12[4:8]}-{d12[8:12]}-{c}" if rng.random() < 0.7 else d12 + c


def version(rng: random.Random) -> str:
    return rng.choice(
        [
            f"{rng.randint(1, 5)}.{rng.randint(0, 20)}.{rng.randint(0, 30)}",
            f"10.0.{rng.choice([19045, 22631, 26100])}",
            f"{rng.randint(100, 131)}.0.{rng.randint(1000, 6999)}.{rng.randint(10, 200)}",
            f"v{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}-rc{rng.randint(1, 4)}",
            f"2.4.{rng.randint(50, 62)}",
        ]
    )


def order_number(rng: random.Random) -> str:
    d = lambda n: "".join(rng.choice(string.digits) for _ in range(n))  # noqa: E731
    return rng.choice(
        [
            f"#{d(7)}",
            f"A-{rng.randint(2019, 2025)}-{d(6)}",
            f"INV-{d(5)}",
            f"RE{d(8)}",
            f"{d(3)}-{d(7)}-{d(7)}",
            f"SO{d(6)}",
        ]
    )


def uuid_value(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def price_value(rng: random.Random, lo: int = 3, hi: int = 2500) -> float:
    return rng.randint(lo, hi) + rng.choice([0, 0.5, 0.99, 0.9, 0.49])


def fmt_price(v: float, lang: str, style: int) -> str:
    if lang == "en":
        return [f"${v:,.2f}", f"US$ {v:.2f}", f"${v:.2f}", f"£{v:.2f}"][style % 4]
    if lang == "ja":
        return f"¥{int(v * 150):,}"
    s = f"{v:,.2f}".replace(",", " ").replace(".", ",")
    return [f"{s} €", f"€ {s}", f"EUR {s}"][style % 3]


def price(rng: random.Random, lang: str, lo: int = 3, hi: int = 2500) -> str:
    v = price_value(rng, lo, hi)
    return fmt_price(v, lang, rng.randrange(12))
