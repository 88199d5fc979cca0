"""Near-duplicate variations of an article: added/dropped paragraphs and edited words."""

from __future__ import annotations

import random

EXTRA_PARAGRAPHS = {
    "en": [
        "Editor's note: this guide was updated to reflect the latest release. If you spot anything that no longer works, let us know in the comments below.",
        "Before we start, make sure you have a recent backup of your system. None of the steps below are destructive, but it is always better to be safe.",
        "This article is part of our beginner series. You can find the previous parts in the archive and the next part will be published next week.",
    ],
    "de": [
        "Hinweis der Redaktion: Dieser Artikel wurde für die aktuelle Version überarbeitet. Wenn etwas nicht mehr funktioniert, schreiben Sie uns gerne einen Kommentar.",
        "Bevor Sie loslegen, sollten Sie eine aktuelle Datensicherung Ihres Systems anlegen. Die folgenden Schritte sind zwar harmlos, aber sicher ist sicher.",
    ],
    "fr": [
        "Note de la rédaction : cet article a été mis à jour pour la dernière version. Si quelque chose ne fonctionne plus, signalez-le dans les commentaires.",
        "Avant de commencer, pensez à faire une sauvegarde récente de votre système. Les étapes suivantes ne sont pas destructives, mais prudence est mère de sûreté.",
    ],
    "es": [
        "Nota del editor: este artículo se ha actualizado para la última versión. Si algo ya no funciona, avísanos en los comentarios.",
        "Antes de empezar, asegúrate de tener una copia de seguridad reciente de tu sistema. Los pasos siguientes no son destructivos, pero más vale prevenir.",
    ],
    "ja": [
        "編集部注：この記事は最新バージョンに合わせて更新されています。うまく動かない点があれば、コメント欄でお知らせください。",
        "作業を始める前に、必ずシステムのバックアップを取っておきましょう。以下の手順は安全ですが、念のためです。",
    ],
    "zh": [
        "编者注：本文已根据最新版本更新。如果发现有步骤不再适用，欢迎在评论区告诉我们。",
        "开始之前，请务必先备份您的系统。以下步骤虽然不会破坏数据，但小心驶得万年船。",
    ],
    "ru": [
        "Примечание редакции: статья обновлена с учётом последней версии. Если что-то перестало работать, напишите нам в комментариях.",
        "Прежде чем начать, сделайте свежую резервную копию системы. Описанные шаги безопасны, но лучше перестраховаться.",
    ],
}

SYNONYMS = {
    "use": "utilize",
    "uses": "utilizes",
    "important": "essential",
    "example": "instance",
    "simple": "easy",
    "shows": "demonstrates",
    "create": "make",
    "allows": "lets",
    "different": "distinct",
    "many": "numerous",
    "first": "initial",
    "need": "require",
    "also": "additionally",
    "however": "though",
    "returns": "gives back",
    "usually": "normally",
    "can": "may",
    "verwenden": "benutzen",
    "wichtig": "wesentlich",
    "einfach": "simpel",
    "können": "dürfen",
    "auch": "ebenfalls",
    "utiliser": "employer",
    "facile": "aisé",
    "aussi": "également",
    "peut": "pourra",
    "usar": "utilizar",
    "importante": "esencial",
    "sencillo": "fácil",
    "también": "además",
    "puede": "podrá",
    "использовать": "применять",
    "важно": "существенно",
    "также": "кроме того",
    "можно": "допустимо",
}


def add_paragraph(blocks: list, lang: str, rng: random.Random) -> list:
    extra = rng.choice(EXTRA_PARAGRAPHS[lang])
    pos = rng.choice([0, 1, len(blocks)])
    return blocks[:pos] + [("p", extra)] + blocks[pos:]


def drop_paragraph(blocks: list, rng: random.Random) -> list:
    idx = [i for i, (t, _) in enumerate(blocks) if t == "p"][1:]
    if not idx:
        return blocks
    drop = rng.choice(idx)
    return blocks[:drop] + blocks[drop + 1 :]


def _edit_words_spaced(text: str, rng: random.Random, k: int) -> str:
    words = text.split(" ")
    if len(words) < 6:
        return text
    for _ in range(k):
        i = rng.randrange(1, len(words) - 1)
        w = words[i]
        key = w.lower().strip(".,;:")
        if key in SYNONYMS and SYNONYMS[key] != key:
            words[i] = w.replace(key, SYNONYMS[key]) if key in w else SYNONYMS[key]
        else:
            op = rng.choice(["swap", "drop", "dup"])
            if op == "swap":
                words[i], words[i + 1] = words[i + 1], words[i]
            elif op == "drop":
                words.pop(i)
            else:
                words.insert(i, w)
    return " ".join(words)


def _edit_chars(text: str, rng: random.Random, k: int) -> str:
    chars = list(text)
    for _ in range(k):
        if len(chars) < 10:
            break
        i = rng.randrange(1, len(chars) - 2)
        if rng.random() < 0.5:
            chars.pop(i)
        else:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)


def edit_words(blocks: list, lang: str, rng: random.Random) -> list:
    idx = [i for i, (t, _) in enumerate(blocks) if t == "p"]
    out = list(blocks)
    for i in rng.sample(idx, min(len(idx), rng.randint(1, 3))):
        t, text = out[i]
        k = rng.randint(2, 4)
        out[i] = (t, _edit_chars(text, rng, k) if lang in ("ja", "zh") else _edit_words_spaced(text, rng, k))
    return out
