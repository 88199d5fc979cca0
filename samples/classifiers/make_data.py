#!/usr/bin/env python3
"""Generate the forum threads the demonstration toxicity and educational-value models learn from and the
classifiers sample run scores: samples/classifiers/{train,comments}.jsonl.

    .venv/bin/python samples/classifiers/make_data.py     # from the repository root; < 1 s; deterministic

Each document is a forum thread of 4 to 7 comments (one per line) in English,
German or French about an everyday topic, built from the sentences below.  A
*toxic* thread has 2 or 3 comments that insult the other posters (name-calling:
the kind of text Jigsaw's toxic-comment data labels toxic; no slurs, no
threats); a *civil* one has none.  ``train.jsonl`` (seed 1) trains the models,
``comments.jsonl`` (seed 2, other threads from the same sentences) is what the
sample run reads: the same vocabulary, so the demonstration models score it
confidently, which is the point of a demonstration and says nothing about real
comments.  Fields: ``id``, ``url`` (a made-up forum), ``date``, ``text``,
``written_in`` (the language it was written in), ``label`` (toxic or civil).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

THINGS = {
    "en": [
        "bike",
        "sourdough starter",
        "garden bed",
        "laptop",
        "sewing machine",
        "camping stove",
        "piano",
        "aquarium",
        "balcony garden",
        "old camera",
        "kitchen knife",
        "tent",
    ],
    "de": [
        "Fahrrad",
        "Sauerteig",
        "Hochbeet",
        "Laptop",
        "Nähmaschine",
        "Campingkocher",
        "Klavier",
        "Aquarium",
        "Balkongarten",
        "alte Kamera",
    ],
    "fr": [
        "vélo",
        "levain",
        "potager",
        "ordinateur portable",
        "machine à coudre",
        "réchaud de camping",
        "piano",
        "aquarium",
        "jardin sur le balcon",
        "vieil appareil photo",
    ],
}

CIVIL = {
    "en": [
        "I tried this with my {thing} last weekend and it worked well for me.",
        "Thanks for writing this up, the second step was the part I was missing.",
        "Does anyone know whether this also works with an older {thing}?",
        "We had the same problem at home and solved it by waiting a day before trying again.",
        "Good point about the cost, although prices have changed a lot this year.",
        "My neighbour asked me about her {thing} yesterday, so I will send her this thread.",
        "I agree with most of this, but I would add a short note about safety.",
        "The photos in the original post are really helpful, thank you.",
        "It took me about an hour, mostly because I could not find the right tools.",
        "I would recommend reading the manual first, it explains the settings clearly.",
        "Has anyone compared this with the newer version that came out in spring?",
        "Our local library has a free course about the {thing} if anyone is interested.",
        "That is a fair question, and I do not think there is one right answer.",
        "I changed my mind after reading the replies here, so thanks everyone.",
        "The shop on the corner sells a {thing} at a better price than the big stores.",
        "Happy to help if you post a picture of what you have so far.",
        "I have been doing this for years and still learn something new every time.",
        "Please keep us updated, I am curious how it turns out with your {thing}.",
        "We made the same mistake the first time and had to start over.",
        "It is a small detail, but the order of the steps really matters.",
        "My kids loved it, and they are usually very hard to impress.",
        "I think the weather will decide most of it, to be honest.",
        "Just a quick note: the link in the second paragraph is broken.",
        "I would be careful with the cheaper version, mine broke after a month.",
        "Great discussion, this forum is always friendly and useful.",
        "Welcome to the forum, and congratulations on your first {thing}!",
        "If you are near the city centre, the repair café on Saturdays can help.",
        "I wrote down my notes from last year and can share them if that helps.",
    ],
    "de": [
        "Ich habe das letztes Wochenende mit meinem {thing} ausprobiert und es hat gut geklappt.",
        "Danke für die Anleitung, genau den zweiten Schritt hatte ich übersehen.",
        "Weiß jemand, ob das auch mit einem älteren {thing} funktioniert?",
        "Wir hatten das gleiche Problem und haben einfach einen Tag gewartet.",
        "Guter Hinweis zu den Kosten, die Preise haben sich dieses Jahr aber stark verändert.",
        "Meine Nachbarin hat mich gestern nach ihrem {thing} gefragt, ich schicke ihr diesen Beitrag.",
        "Ich stimme fast allem zu, würde aber noch einen Satz zur Sicherheit ergänzen.",
        "Die Fotos im ersten Beitrag sind wirklich hilfreich, vielen Dank.",
        "Bei mir hat es etwa eine Stunde gedauert, weil ich das passende Werkzeug suchen musste.",
        "Ich empfehle, zuerst die Anleitung zu lesen, dort sind die Einstellungen gut erklärt.",
        "Hat jemand das mit der neuen Version aus dem Frühjahr verglichen?",
        "Die Stadtbibliothek bietet einen kostenlosen Kurs zum {thing} an, falls jemand Interesse hat.",
        "Das ist eine berechtigte Frage, und ich glaube nicht, dass es nur eine richtige Antwort gibt.",
        "Nach den Antworten hier habe ich meine Meinung geändert, danke an alle.",
        "Bitte haltet uns auf dem Laufenden, ich bin gespannt, wie es mit dem {thing} weitergeht.",
        "Wir haben beim ersten Mal denselben Fehler gemacht und mussten neu anfangen.",
        "Es ist nur eine Kleinigkeit, aber die Reihenfolge der Schritte ist wirklich wichtig.",
        "Willkommen im Forum und herzlichen Glückwunsch zum ersten {thing}!",
    ],
    "fr": [
        "J'ai essayé cela avec mon {thing} le week-end dernier et cela a bien marché.",
        "Merci pour ce résumé, c'est justement la deuxième étape qui me manquait.",
        "Est-ce que quelqu'un sait si cela fonctionne aussi avec un ancien {thing} ?",
        "Nous avons eu le même problème à la maison et nous avons simplement attendu un jour.",
        "Bonne remarque sur le prix, même si les tarifs ont beaucoup changé cette année.",
        "Ma voisine m'a posé une question sur son {thing} hier, je vais lui envoyer cette discussion.",
        "Je suis d'accord avec presque tout, mais j'ajouterais une note sur la sécurité.",
        "Les photos du premier message sont vraiment utiles, merci beaucoup.",
        "Cela m'a pris environ une heure, surtout parce que je cherchais les bons outils.",
        "Je conseille de lire le manuel d'abord, les réglages y sont bien expliqués.",
        "Quelqu'un a-t-il comparé avec la nouvelle version sortie au printemps ?",
        "La bibliothèque du quartier propose un atelier gratuit sur le {thing} si cela vous intéresse.",
        "C'est une question légitime, et je ne crois pas qu'il existe une seule bonne réponse.",
        "J'ai changé d'avis en lisant vos réponses, merci à tous.",
        "Tenez-nous au courant, je suis curieux de savoir comment cela se passe avec le {thing}.",
        "Nous avons fait la même erreur la première fois et il a fallu tout recommencer.",
        "C'est un petit détail, mais l'ordre des étapes compte vraiment.",
        "Bienvenue sur le forum et félicitations pour votre premier {thing} !",
    ],
}

TOXIC = {
    "en": [
        "You are a complete idiot and nobody here wants to read your garbage.",
        "Shut up, you pathetic loser, nobody asked for your opinion.",
        "This is the dumbest thing I have ever read, are you really that stupid?",
        "Only a moron would post something this useless.",
        "Get lost, clown, and take your worthless advice with you.",
        "What an ignorant fool, nobody with a brain would believe this.",
        "People like you are the reason this forum is full of trash.",
        "Nobody cares about your stupid {thing}, you absolute joke.",
        "You clearly have no brain, stop wasting everyone's time.",
        "Pathetic, just pathetic, you should be embarrassed to post this.",
        "Are you stupid or just pretending, either way shut up.",
        "What a useless idiot, you ruin every thread you touch.",
        "Go away, you miserable troll, nobody likes you here.",
        "This is garbage written by a clueless moron.",
        "You are a disgrace and a total waste of space.",
        "Stop talking, your ignorance is painful to watch, you fool.",
    ],
    "de": [
        "Du bist ein kompletter Idiot und niemand will deinen Müll lesen.",
        "Halt die Klappe, du erbärmlicher Versager, niemand hat dich gefragt.",
        "Das ist das Dümmste, was ich je gelesen habe, bist du wirklich so blöd?",
        "Nur ein Vollidiot schreibt so einen nutzlosen Unsinn.",
        "Verschwinde, du Clown, und nimm deine wertlosen Ratschläge mit.",
        "Leute wie du sind der Grund, warum dieses Forum voller Müll ist.",
        "Niemanden interessiert dein dämlicher {thing}, du Witzfigur.",
        "Du hast offensichtlich kein Hirn, hör auf, allen die Zeit zu stehlen.",
        "Erbärmlich, einfach nur erbärmlich, du solltest dich schämen.",
        "Was für ein nutzloser Trottel, du ruinierst jede Diskussion.",
        "Hau ab, du elender Troll, hier mag dich keiner.",
        "Du bist eine Schande und eine totale Zeitverschwendung.",
    ],
    "fr": [
        "Tu es un parfait imbécile et personne ne veut lire tes âneries.",
        "Tais-toi, pauvre minable, personne ne t'a demandé ton avis.",
        "C'est la chose la plus stupide que j'ai jamais lue, tu es vraiment si bête ?",
        "Il faut être un crétin fini pour écrire un truc aussi inutile.",
        "Dégage, espèce de clown, et garde tes conseils minables.",
        "Les gens comme toi sont la raison pour laquelle ce forum est une poubelle.",
        "Tout le monde se fiche de ton stupide {thing}, pauvre guignol.",
        "Tu n'as visiblement pas de cerveau, arrête de faire perdre du temps à tout le monde.",
        "Pathétique, vraiment pathétique, tu devrais avoir honte.",
        "Quel abruti inutile, tu gâches chaque discussion.",
        "Va-t'en, sale troll, personne ne t'aime ici.",
        "Tu es une honte et une perte de temps totale.",
    ],
}

FORUM = {
    "en": "https://forum.example.com/t/{n}",
    "de": "https://forum.example.de/thema/{n}",
    "fr": "https://forum.example.fr/sujet/{n}",
}
LANGUAGES = {"en": 0.5, "de": 0.25, "fr": 0.25}
TOXIC_SHARE = 0.3


def comment(rng: random.Random, pool: list[str], used: set[str], thing: str) -> str:
    """Two or three sentences not used yet in this thread."""
    free = [s for s in pool if s not in used]
    picked = rng.sample(free, min(len(free), rng.randint(2, 3)))
    used.update(picked)
    return " ".join(s.format(thing=thing) for s in picked)


def thread(rng: random.Random, lang: str, toxic: bool) -> str:
    thing = rng.choice(THINGS[lang])
    used: set[str] = set()
    n = rng.randint(4, 7)
    bad = set(rng.sample(range(1, n), rng.randint(2, 3))) if toxic else set()  # the first comment is the question
    return "\n".join(comment(rng, TOXIC[lang] if i in bad else CIVIL[lang], used, thing) for i in range(n))


def threads(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    langs, weights = list(LANGUAGES), list(LANGUAGES.values())
    out = []
    for i in range(count):
        lang = rng.choices(langs, weights)[0]
        toxic = rng.random() < TOXIC_SHARE
        out.append(
            {
                "id": f"forum-{seed}-{i:04d}",
                "url": FORUM[lang].format(n=seed * 10_000 + i),
                "date": f"2026-01-{1 + i % 28:02d}T12:00:00Z",
                "text": thread(rng, lang, toxic),
                "written_in": lang,
                "label": "toxic" if toxic else "civil",
            }
        )
    return out


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder for train.jsonl and comments.jsonl")
    args = parser.parse_args(argv)
    write(args.out / "train.jsonl", threads(1, 400))
    write(args.out / "comments.jsonl", threads(2, 120))
    return 0


if __name__ == "__main__":
    sys.exit(main())
