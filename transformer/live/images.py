"""What the Images page shows of one image read by a shipped Vision Transformer: its prediction, every head's
attention, rollout from every token and flow from the token asked, each head's mean attention distance and the
positions' similarity."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from transformer.analysis.flow import attention_flow
from transformer.analysis.images import mean_attention_distance, position_similarity
from transformer.analysis.measures import attention_rollout
from transformer.tasks.images import IMAGE_TASKS, get_image_task
from transformer.training.pretrained import load_pretrained
from transformer.training.vision_kept import is_vision_name, vision_model, vision_spec

IMAGE_MODELS = tuple(IMAGE_TASKS)  # a shipped model a task, named after it


@dataclass(frozen=True)
class ImageReading:
    """``probabilities (C,)`` of ``classes``; ``weights (L, H, 17, 17)``; ``rollout (17, 17)`` (row i: what reaches
    token i's last-layer output from each token), and `flow` of a token; ``distance (L, H)`` in patches;
    ``positions (16, 16)`` the learned positions' cosine similarity."""

    name: str
    classes: tuple
    probabilities: np.ndarray
    weights: np.ndarray
    rollout: np.ndarray
    distance: np.ndarray
    positions: np.ndarray
    _flows: dict = field(default_factory=dict, compare=False, repr=False)  # {token: its flow row}, as asked

    def flow(self, token: int) -> np.ndarray:
        """``(17,)`` what reaches ``token``'s last-layer output from each token by attention flow: 17 maximum flows,
        solved the first time a token is asked (all 289 of the map took ~0.3 s of a pixel edit). ValueError
        naming a token outside 0 … 16."""
        if token not in self._flows:
            self._flows[token] = attention_flow(self.weights, queries=[token])[0]  # (17,)
        return self._flows[token]

    @property
    def predicted(self) -> int:
        return int(np.argmax(self.probabilities))


def image_task(name: str) -> str:
    """The task of an image model: a shipped one's name, or the task a kept one (``image:<key>``, trained on the
    Train page) learned. ValueError naming an unknown model."""
    if name in IMAGE_MODELS:
        return name
    if not is_vision_name(name):
        raise ValueError(f"The image models are {list(IMAGE_MODELS)} and those trained here (image:<key>). "
                         f"Received: {name!r}")
    return vision_spec(name).task


def read_image(name: str, image, device: str | None = None) -> ImageReading:
    """Everything the page draws of ``image (8, 8)`` in [0, 1] read by the image model ``name`` ("match",
    "digits", or one trained here: `image_task`). ValueError naming an unknown model or a bad image."""
    image_task(name)
    model = load_pretrained(name, device) if name in IMAGE_MODELS else vision_model(name, device)
    probabilities, attention = model.read_image(image)
    weights = attention["encoder"]  # (L, H, 17, 17)
    return ImageReading(name, model.classes, probabilities, weights, attention_rollout(weights),
                        mean_attention_distance(weights), position_similarity(model.positions))


def example_image(name: str, pick: int) -> tuple[np.ndarray, int]:
    """An image of model ``name``'s task (`image_task`) and its label: a fresh match image drawn from seed ``pick``,
    or digits' test image ``pick`` (0 … 299). ValueError outside."""
    task = get_image_task(image_task(name))
    if task.name == "digits":
        return task.test_image(pick)
    if isinstance(pick, bool) or not isinstance(pick, (int, np.integer)) or not 0 <= pick < 2**31:
        raise ValueError(f"A match image is drawn from a seed from 0 to 2^31 - 1. Received: pick={pick!r}")
    images, labels = task.sample(np.random.default_rng(pick), 1)
    return images[0], int(labels[0])


def deletion_test(name: str, deleted: int = 4, count: int = 300, draws: int = 5, seed: int = 0) -> dict:
    """Does rollout say which patches the answer needs? On ``count`` evaluation images of ``name``'s task: the
    accuracy intact, with the ``deleted`` patches rollout ranks highest from CLS blacked out (set to 0), and with as
    many random patches blacked out (``draws`` draws an image). ``{"intact", "rollout", "random"}``."""
    if name not in IMAGE_MODELS or not 1 <= deleted <= 15:
        raise ValueError(f"Need an image model of {list(IMAGE_MODELS)} and 1 to 15 patches. Received: name={name!r}, "
                         f"deleted={deleted!r}")
    model, task = load_pretrained(name), get_image_task(name)
    images, labels = task.evaluation(count)
    rng = np.random.default_rng(seed)
    logits, weights = model.model(images)  # (B, C), L × (B, H, 17, 17)
    stacked = np.stack([layer.numpy() for layer in weights], 1)  # (B, L, H, 17, 17)
    ranked = [np.argsort(-attention_rollout(maps)[0, 1:])[:deleted] for maps in stacked]  # CLS's top patches
    chosen = [rng.permutation(16)[:deleted] for _ in range(count * draws)]
    by_rollout = np.stack([_blacked(image, patches) for image, patches in zip(images, ranked)])
    by_chance = np.stack([_blacked(images[i // draws], patches) for i, patches in enumerate(chosen)])
    right = lambda batch, truth: float(np.mean(np.argmax(model.model(batch)[0], -1) == truth))  # noqa: E731
    return {"intact": float(np.mean(np.argmax(logits, -1) == labels)), "rollout": right(by_rollout, labels),
            "random": right(by_chance, np.repeat(labels, draws))}


def _blacked(image: np.ndarray, patches) -> np.ndarray:
    image = image.copy()
    for patch in patches:
        r, c = divmod(int(patch), 4)
        image[2 * r:2 * r + 2, 2 * c:2 * c + 2] = 0.0
    return image


__all__ = ["IMAGE_MODELS", "ImageReading", "deletion_test", "example_image", "image_task", "read_image"]
