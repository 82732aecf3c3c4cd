"""Image tasks for a Vision Transformer (`transformer.core.vision`): 8×8 images in [0, 1], cut into 16 patches of
2×2 pixels numbered row-major (patch 0 is the top-left).

- ``match``: patches 1–15 carry 15 different patterns of the 16 a 2×2 binary patch can have; patch 0 repeats
  exactly one of them. The label is the matching patch: class ``k`` is patch ``k + 1``. The right attention is
  known — something must look from the corner to its match.
- ``digits``: scikit-learn's 8×8 handwritten digits (1,797 images shipped inside the package; nothing downloads),
  scaled to [0, 1], split 1,497 / 300 by a shuffle seeded 0; training images are shifted by up to one pixel.
"""

from __future__ import annotations

import functools

import numpy as np

IMAGE = 8  # pixels a side
PATCH = 2  # pixels a side of a patch
GRID = IMAGE // PATCH  # patches a side
PATCHES = GRID * GRID  # 16
PATTERNS = 2 ** (PATCH * PATCH)  # 16 binary 2×2 patterns


def patch_pixels(pattern: int) -> np.ndarray:
    """The ``(2, 2)`` pixels of binary pattern ``pattern`` (bit 3 is the top-left pixel, bit 0 the bottom-right)."""
    bits = [(pattern >> shift) & 1 for shift in (3, 2, 1, 0)]
    return np.array(bits, np.float32).reshape(PATCH, PATCH)


def image_patches(images) -> np.ndarray:
    """``(B, 8, 8)`` -> ``(B, 16, 4)``: each patch's pixels, patches row-major, a patch's pixels row-major."""
    images = np.asarray(images, np.float32)
    blocks = images.reshape(-1, GRID, PATCH, GRID, PATCH).transpose(0, 1, 3, 2, 4)  # (B, 4, 4, 2, 2)
    return blocks.reshape(-1, PATCHES, PATCH * PATCH)


def check_image(image) -> np.ndarray:
    """``image`` as a float32 ``(8, 8)`` array in [0, 1]; ValueError naming what is wrong."""
    try:
        array = np.asarray(image, np.float32)
    except (TypeError, ValueError):
        raise ValueError(f"An image is an (8, 8) array of numbers in [0, 1]. Received: {type(image).__name__}") \
            from None
    if array.shape != (IMAGE, IMAGE):
        raise ValueError(f"An image is an (8, 8) array of numbers in [0, 1]. Received: shape={array.shape}")
    finite = array[np.isfinite(array)]
    if finite.size < array.size or array.min() < 0 or array.max() > 1:
        low, high = (f"{finite.min():.3g}", f"{finite.max():.3g}") if finite.size else ("none", "none")
        raise ValueError(f"An image's pixels are in [0, 1]. Received: min={low}, max={high}, "
                         f"{array.size - finite.size} not finite")
    return array


class ImageTask:
    """An image classification task: ``classes`` their names; ``sample`` draws training images."""

    name = ""
    description = ""
    classes: tuple = ()

    def sample(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``(images (count, 8, 8) float32, labels (count,) int32)`` for training."""
        raise NotImplementedError

    def evaluation(self, count: int, seed: int = 12345) -> tuple[np.ndarray, np.ndarray]:
        """Images the model never trained on, and their labels."""
        raise NotImplementedError


class MatchTask(ImageTask):
    name = "match"
    description = ("Which patch does the top-left corner repeat? 15 patches carry 15 different 2×2 patterns; the "
                   "corner copies one of them. A head must look from the corner to its match.")
    classes = tuple(f"patch {patch}" for patch in range(1, PATCHES))

    def sample(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        images = np.zeros((count, IMAGE, IMAGE), np.float32)
        labels = rng.integers(0, PATCHES - 1, count).astype(np.int32)
        for row in range(count):
            patterns = rng.permutation(PATTERNS)[: PATCHES - 1]  # 15 different of the 16
            layout = [patterns[labels[row]], *patterns]  # patch 0 repeats patch label + 1
            for patch, pattern in enumerate(layout):
                r, c = divmod(patch, GRID)
                images[row, r * PATCH:(r + 1) * PATCH, c * PATCH:(c + 1) * PATCH] = patch_pixels(pattern)
        return images, labels

    def evaluation(self, count: int, seed: int = 12345) -> tuple[np.ndarray, np.ndarray]:
        return self.sample(np.random.default_rng(seed), count)

    @staticmethod
    def matching_patch(label: int) -> int:
        """The patch the corner repeats in an image of class ``label``."""
        return int(label) + 1


TEST_COUNT = 300  # the digits held out


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits  # noqa: PLC0415  (scikit-learn only for this task)

    digits = load_digits()
    order = np.random.default_rng(0).permutation(len(digits.images))
    return (digits.images[order] / 16.0).astype(np.float32), digits.target[order].astype(np.int32)


def _shifted(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each image moved by up to one pixel in each direction (zeros come in)."""
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))  # (B, 10, 10)
    rows, cols = rng.integers(0, 3, len(images)), rng.integers(0, 3, len(images))
    return np.stack([padded[i, r:r + IMAGE, c:c + IMAGE] for i, (r, c) in enumerate(zip(rows, cols))])


class DigitsTask(ImageTask):
    name = "digits"
    description = "Which digit is it? scikit-learn's 8×8 handwritten digits, 300 held out for testing."
    classes = tuple(str(digit) for digit in range(10))

    def sample(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        images, labels = _digits()
        chosen = rng.integers(0, len(images) - TEST_COUNT, count)
        return _shifted(images[chosen], rng), labels[chosen]

    def evaluation(self, count: int = TEST_COUNT, seed: int = 12345) -> tuple[np.ndarray, np.ndarray]:
        images, labels = _digits()
        return images[-TEST_COUNT:][:count], labels[-TEST_COUNT:][:count]

    def test_image(self, index: int) -> tuple[np.ndarray, int]:
        """Test image ``index`` (0 … 299) and its label; ValueError outside."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < TEST_COUNT:
            raise ValueError(f"The digits' test images run from 0 to {TEST_COUNT - 1}. Received: index={index!r}")
        images, labels = self.evaluation()
        return images[index], int(labels[index])


IMAGE_TASKS = {task.name: task for task in (MatchTask(), DigitsTask())}


def get_image_task(name: str) -> ImageTask:
    if name not in IMAGE_TASKS:
        raise ValueError(f"Unknown image task. Choose one of {list(IMAGE_TASKS)}. Received: {name!r}")
    return IMAGE_TASKS[name]
