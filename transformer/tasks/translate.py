"""A word-level toy translation into a made-up language with subject–object–verb order.

English-like source: ``DET [ADJ] NOUN VERB DET [ADJ] NOUN [ADVERB] [PREP DET [ADJ] PLACE]``. The
target puts the verb last (its stem, then the tense word ``ta``: one source word, two target
words), each adjective after its noun, the adverb after the place, and each preposition after
its noun phrase (a postposition): alignments cross and fan out, as in the paper's figures.
"""

from __future__ import annotations

import re

import numpy as np

from transformer.tasks.base import Task

LEXICON = {  # category -> {English: made-up}
    "D": {"the": "ko", "a": "na", "every": "sa", "this": "ti"},
    "A": {"big": "gor", "small": "pim", "red": "ruk", "blue": "lez", "old": "mav", "young": "tiw", "happy": "jol",
          "sad": "bru", "quick": "fes", "slow": "dul", "green": "virn", "tall": "hoth"},
    "N": {"dog": "hund", "cat": "miz", "bird": "pav", "horse": "kaval", "man": "omo", "woman": "fema",
          "child": "kin", "farmer": "agri", "teacher": "doka", "king": "reko", "apple": "pomi", "book": "libo"},
    "L": {"garden": "hort", "river": "fluv", "house": "dom", "park": "parko", "city": "urb"},
    "V": {"sees": "vid", "likes": "am", "chases": "kur", "finds": "trov", "takes": "pren", "helps": "aju",
          "follows": "seg", "hears": "aud", "calls": "vok", "watches": "spek"},
    "R": {"quickly": "rapi", "slowly": "lenti", "often": "ofte", "today": "hodi", "quietly": "kviet",
          "happily": "feli"},
    "P": {"in": "en", "near": "apud", "behind": "post", "under": "sub"},
}
TENSE = "ta"  # the made-up language's past-tense word, after every verb stem
CATEGORY = {word: category for category, words in LEXICON.items() for word in words}
SENTENCE = re.compile(r"(?P<subject>DA?N)(?P<verb>V)(?P<object>DA?N)(?P<adverb>R)?(?P<place>PDA?L)?")


def _parts(words: list[str]) -> dict[str, list[int]]:
    """The source positions of each part of a sentence; ValueError naming words outside the grammar."""
    unknown = sorted({word for word in words if word not in CATEGORY})
    if unknown:
        raise ValueError(f"Words outside this model's vocabulary: {', '.join(unknown[:10])}.")
    match = SENTENCE.fullmatch("".join(CATEGORY[word] for word in words))
    if not match:
        raise ValueError("Not a sentence of the toy grammar: DET [ADJ] NOUN VERB DET [ADJ] NOUN [ADVERB] "
                         "[PREP DET [ADJ] PLACE], e.g. 'the old farmer sees a red bird quickly near the river'.")
    return {name: list(range(*match.span(name))) for name in SENTENCE.groupindex if match[name]}


def _noun_phrase(positions: list[int]) -> list[int]:
    """Determiner, noun, then the adjective: source positions in target order."""
    determiner, *adjective, noun = positions
    return [determiner, noun, *adjective]


def target_order(words: list[str]) -> list[int]:
    """For each target word, the source position it translates (the verb's twice: stem, then tense)."""
    parts = _parts(words)
    order = _noun_phrase(parts["subject"]) + _noun_phrase(parts["object"])
    if "place" in parts:
        preposition, *phrase = parts["place"]
        order += _noun_phrase(phrase) + [preposition]
    order += parts.get("adverb", []) + parts["verb"] * 2
    return order


class TranslateTask(Task):
    name = "translate"
    description = ("Translate into a subject–object–verb language with adjectives after their noun and "
                   "postpositions: cross-attention crosses (the verb comes last) and fans out (verb + ta).")
    tokens = tuple(sorted({*CATEGORY, *(w for words in LEXICON.values() for w in words.values()), TENSE}))
    lengths = (5, 12)
    example = ("the old farmer sees a red bird quickly near the river\nevery child likes this book\n"
               "a tall king calls the sad teacher in the big city")
    vocabulary_hint = "It knows these English words — " + "; ".join(
        f"{name}: {', '.join(LEXICON[category])}" for category, name in (
            ("D", "determiners"), ("A", "adjectives"), ("N", "nouns"), ("V", "verbs"), ("R", "adverbs"),
            ("P", "prepositions"), ("L", "places"))) + "."

    def target_length(self, source_length: int) -> int:
        return source_length + 1

    def solve(self, tokens) -> list[str]:
        words = list(tokens)
        *translated, _verb_again = target_order(words)  # the verb's second place is its tense word
        return [LEXICON[CATEGORY[words[i]]][words[i]] for i in translated] + [TENSE]

    def sample(self, rng, lengths=None):
        def pick(category):
            words = list(LEXICON[category])
            return words[int(rng.integers(len(words)))]

        def noun_phrase(noun_category):
            adjective = [pick("A")] if rng.random() < 0.5 else []
            return [pick("D"), *adjective, pick(noun_category)]

        sentence = noun_phrase("N") + [pick("V")] + noun_phrase("N")
        if rng.random() < 0.5:
            sentence.append(pick("R"))
        if rng.random() < 0.5:
            sentence += [pick("P"), *noun_phrase("L")]
        return sentence

    def align(self, tokens) -> list[int]:
        return target_order(list(tokens))

    def examples(self, count, seed=0):
        rng = np.random.default_rng(seed)
        triples = []
        for _ in range(count):
            words = self.sample(rng)
            triples.append((" ".join(words), " ".join(self.solve(words)), self.align(words)))
        return triples
