"""What every task is: typed text -> source tokens -> the right target tokens -> text as a person writes it."""

from __future__ import annotations

import numpy as np

from transformer.core.tokens import Vocabulary

PAD, START, END = "<pad>", "<s>", "</s>"
SPECIALS = (PAD, START, END)
PAD_ID, START_ID, END_ID = 0, 1, 2


def task_vocabulary(tokens) -> Vocabulary:
    """The vocabulary whose ids are the positions of ``tokens`` (specials first), the specials reserved: typed
    input may not use them. A task's own, or a trained model's token list (``model.json``)."""
    return Vocabulary.of(tokens, reserved=SPECIALS)


class Task:
    """A sequence-to-sequence task. Subclasses set ``name``, ``description``, ``tokens`` (every token of
    either side, specials excluded), ``example`` (a few source lines for the app) and implement the
    methods that raise NotImplementedError.

    ``alignment``: "diagonal", "anti-diagonal" or None, the shape cross-attention should take.
    ``lengths``: ``(min, max)`` source tokens a model of this task is trained on by default.
    ``own_lengths``: the task draws sources of its own lengths (a training run's max_len must hold them);
    False: it draws them between a training run's min_len and max_len.
    ``decoder_only``: the source is one line whose next tokens a decoder-only model predicts; ``solve`` gives the
    rule's next token at each position.
    """

    name = ""
    description = ""
    alignment: str | None = None
    tokens: tuple = ()
    example = ""
    lengths = (3, 10)
    own_lengths = True
    vocabulary_hint = ""  # what a source may use, said after a message naming tokens outside the vocabulary
    decoder_only = False  # True: a next-token task on one line (no target side), for a decoder-only model

    def vocabulary(self) -> Vocabulary:
        """Specials, then the task's tokens (`task_vocabulary`)."""
        return task_vocabulary(SPECIALS + tuple(self.tokens))

    @property
    def prompt(self) -> str:
        """What the Decode page starts from: the example's first line."""
        return self.example.splitlines()[0]

    def source_tokens(self, text: str) -> list[str]:
        """The tokens of one typed source line."""
        return text.split()

    def source_text(self, tokens) -> str:
        """Source tokens written as a person types them (`source_tokens` reads them back)."""
        return " ".join(tokens)

    def target_text(self, tokens) -> str:
        """Target tokens written as a person writes them."""
        return " ".join(tokens)

    def fresh_line(self, rng: np.random.Generator, lengths: tuple[int, int]) -> str:
        """One fresh source line, as text, of the distribution the task's measures read (a patching study's clean
        line); ``lengths`` bounds a free-length task's."""
        return self.source_text(self.sample(rng, lengths))

    def target_length(self, source_length: int) -> int:
        """The most target tokens a source of ``source_length`` tokens can have."""
        return source_length

    def solve(self, tokens) -> list[str]:
        """The right target tokens for source ``tokens``; ValueError when the source is not of the task's form."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, lengths: tuple[int, int]) -> list[str]:
        """One random source (tokens); ``lengths`` bounds a free-length task's sources."""
        raise NotImplementedError

    def align(self, tokens) -> list[int | None]:
        """For each right target token of source ``tokens``, the index of the source token it comes from, or None
        (what cross-attention should look at)."""
        raise NotImplementedError

    def examples(self, count: int, seed: int = 0) -> list[tuple]:
        """``count`` fresh ``(source_text, target_text, alignment)`` triples: ``alignment[j]`` is the index of
        the source token that target token ``j`` comes from, or None."""
        raise NotImplementedError

    def expected(self, source_text: str) -> str | None:
        """The right answer to a typed source, as text; None when the source is not of the task's form."""
        try:
            return self.target_text(self.solve(self.source_tokens(source_text)))
        except ValueError:
            return None


def make_batch(task: Task, vocab: Vocabulary, sources, length: int):
    """Padded arrays for teacher forcing.

    Returns ``src (B, length)``, ``decoder_input (B, T + 1)`` = <s> + target and
    ``labels (B, T + 1)`` = target + </s>, all padded with 0, T = ``task.target_length(length)``.
    """
    batch, target_length = len(sources), task.target_length(length)
    src = np.zeros((batch, length), np.int32)
    decoder_input = np.zeros((batch, target_length + 1), np.int32)
    labels = np.zeros((batch, target_length + 1), np.int32)
    for row, source in enumerate(sources):
        target = vocab.encode(task.solve(source))
        src[row, : len(source)] = vocab.encode(source)
        decoder_input[row, : len(target) + 1] = [START_ID] + target
        labels[row, : len(target) + 1] = target + [END_ID]
    return src, decoder_input, labels
