"""Attention over images: the two image tasks, the Vision Transformer against an independent NumPy forward pass from
its weights, training, saving and reading an image, and bad input."""

import numpy as np
import pytest
import tensorflow as tf

from transformer.core.vision import VisionTransformer, patch_rows
from transformer.tasks.images import TEST_COUNT, check_image, get_image_task, image_patches, patch_pixels


def test_patches_are_numbered_row_major_and_the_engine_cuts_them_as_numpy_does():
    image = np.arange(64, dtype=np.float32).reshape(8, 8)
    patches = image_patches(image[None])[0]  # (16, 4)
    np.testing.assert_array_equal(patches[0], [0, 1, 8, 9])  # the top-left patch
    np.testing.assert_array_equal(patches[5], image[2:4, 2:4].ravel())  # row 1, column 1
    np.testing.assert_array_equal(patch_rows(tf.constant(image[None])).numpy(), patches[None])


def test_a_match_image_repeats_exactly_one_of_fifteen_different_patterns_in_its_corner():
    images, labels = get_image_task("match").sample(np.random.default_rng(3), 50)
    patches = image_patches(images)  # (50, 16, 4)
    for row, label in enumerate(labels):
        others = {tuple(patch) for patch in patches[row, 1:]}
        assert len(others) == 15 and set(np.unique(images[row])) <= {0.0, 1.0}
        assert [np.array_equal(patches[row, 0], patch) for patch in patches[row, 1:]].count(True) == 1
        np.testing.assert_array_equal(patches[row, 0], patches[row, label + 1])
    assert len(set(labels.tolist())) > 10  # the classes are drawn evenly
    np.testing.assert_array_equal(patch_pixels(0b1001), [[1, 0], [0, 1]])


def test_the_digits_are_scaled_split_once_and_the_test_images_are_fixed():
    task = get_image_task("digits")
    images, labels = task.evaluation()
    assert images.shape == (TEST_COUNT, 8, 8) and 0 <= images.min() and images.max() == 1
    again, _ = get_image_task("digits").evaluation()
    np.testing.assert_array_equal(images, again)
    trained, trained_labels = task.sample(np.random.default_rng(0), 64)
    assert trained.shape == (64, 8, 8) and set(trained_labels.tolist()) <= set(range(10))
    image, label = task.test_image(7)
    np.testing.assert_array_equal(image, images[7]) and label == labels[7]
    with pytest.raises(ValueError, match="from 0 to 299. Received: index=300"):
        task.test_image(300)


def _layer_norm(x, gamma, beta):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-6) * gamma + beta


def _numpy_vit(weights: dict, images, heads: int, layers: int, d_ff: int):
    """Logits ``(B, C)`` and weights ``L × (B, H, 17, 17)`` from the model's arrays alone (pre-norm blocks)."""
    w = {path.split("/", 1)[1]: value for path, value in weights.items()}
    patches = image_patches(images)  # (B, 16, 4)
    x = patches @ w["patch_embedding/kernel"] + w["patch_embedding/bias"]  # (B, 16, D)
    x = np.concatenate([np.broadcast_to(w["cls"], (len(x), 1, x.shape[-1])), x], axis=1) + w["positions/table"]
    d = x.shape[-1]
    d_k, maps = d // heads, []
    for layer in range(layers):
        at = f"encoder/block_{layer}/self_attention_block/"
        y = _layer_norm(x, w[at + "layer_norm/gamma"], w[at + "layer_norm/beta"])
        q, k, v = (y @ w[at + f"attention/transform_{name}/kernel"] + w[at + f"attention/transform_{name}/bias"]
                   for name in ("query", "key", "value"))
        split = lambda t: t.reshape(len(t), -1, heads, d_k).transpose(0, 2, 1, 3)  # noqa: E731  (B, H, 17, d_k)
        scores = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(d_k)  # (B, H, 17, 17)
        alpha = np.exp(scores - scores.max(-1, keepdims=True))
        alpha /= alpha.sum(-1, keepdims=True)
        maps.append(alpha)
        context = (alpha @ split(v)).transpose(0, 2, 1, 3).reshape(len(x), -1, d)  # (B, 17, D)
        x = x + context @ w[at + "attention/transform_out/kernel"] + w[at + "attention/transform_out/bias"]
        if d_ff:
            at = f"encoder/block_{layer}/feed_forward_block/"
            y = _layer_norm(x, w[at + "layer_norm/gamma"], w[at + "layer_norm/beta"])
            hidden = np.maximum(0, y @ w[at + "feed_forward/hidden/kernel"] + w[at + "feed_forward/hidden/bias"])
            x = x + hidden @ w[at + "feed_forward/project/kernel"] + w[at + "feed_forward/project/bias"]
    x = _layer_norm(x, w["encoder/final_norm/gamma"], w["encoder/final_norm/beta"])
    return x[:, 0] @ w["classifier/kernel"] + w["classifier/bias"], maps


@pytest.mark.parametrize("heads, layers, d_ff", [(4, 2, 0), (2, 3, 16)])
def test_the_vision_transformer_equals_a_numpy_forward_pass_from_its_weights(heads, layers, d_ff):
    tf.keras.utils.set_random_seed(1)
    model = VisionTransformer(10, d_model=16, num_heads=heads, num_layers=layers, d_ff=d_ff)
    model.build()
    for weight in model.weights:  # every weight random, the CLS token and LayerNorm's too
        weight.assign(np.random.default_rng(len(weight.path)).normal(0, 0.5, weight.shape).astype(np.float32))
    images = np.random.default_rng(0).random((3, 8, 8)).astype(np.float32)
    logits, maps = model(images)
    expected_logits, expected_maps = _numpy_vit({w.path: w.numpy() for w in model.weights}, images, heads, layers,
                                                d_ff)
    np.testing.assert_allclose(logits.numpy(), expected_logits, atol=1e-4)
    for found, expected in zip(maps, expected_maps):
        np.testing.assert_allclose(found.numpy(), expected, atol=1e-5)
    rebuilt = VisionTransformer.from_config(model.get_config())
    assert (rebuilt.num_heads, rebuilt.num_layers, rebuilt.d_ff) == (heads, layers, d_ff)


@pytest.mark.parametrize("image, message", [
    (np.zeros((8, 7)), "shape=\\(8, 7\\)"), (np.full((8, 8), 1.5), "max=1.5"), ("an image", "Received: str"),
    (np.full((8, 8), np.nan), "64 not finite"),
])
def test_a_bad_image_is_refused_naming_what_is_wrong(image, message):
    with pytest.raises(ValueError, match=message):
        check_image(image)


def test_mean_attention_distance_and_position_similarity_equal_their_definitions():
    from transformer.analysis.images import mean_attention_distance, on_grid, patch_distances, position_similarity

    rng = np.random.default_rng(0)
    weights = rng.random((2, 3, 17, 17))
    weights /= weights.sum(-1, keepdims=True)
    expected = np.zeros((2, 3))
    for layer in range(2):
        for head in range(3):
            for query in range(16):
                row = weights[layer, head, 1 + query, 1:]
                expected[layer, head] += sum(row[key] / row.sum() * np.hypot(query // 4 - key // 4, query % 4 - key % 4)
                                             for key in range(16)) / 16
    np.testing.assert_allclose(mean_attention_distance(weights), expected)
    assert patch_distances()[0, 15] == pytest.approx(np.hypot(3, 3)) and patch_distances()[5, 6] == 1
    table = rng.normal(size=(17, 8))
    similarity = position_similarity(table)
    a, b = table[1 + 2], table[1 + 9]
    assert similarity[2, 9] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    np.testing.assert_allclose(np.diag(similarity), 1.0)
    np.testing.assert_array_equal(on_grid(np.arange(16))[1], [4, 5, 6, 7])
    with pytest.raises(ValueError, match="weights must be \\(L, H, 17, 17\\)"):
        mean_attention_distance(weights[..., :16])


@pytest.mark.slow
def test_the_shipped_match_model_finds_the_corners_match_by_attention():
    """docs/images.md: 100 % on fresh images; in layer 0 a head looks from the corner to its match, in layer 1 CLS
    looks at the match (uniform would be 1/17 = 0.06)."""
    from transformer.training.pretrained import load_pretrained

    model = load_pretrained("match")
    images, labels = get_image_task("match").evaluation(200, seed=99)
    right, corner, cls = 0, [], []
    for image, label in zip(images, labels):
        probabilities, attention = model.read_image(image)
        weights = attention["encoder"]  # (L, H, 17, 17)
        assert probabilities.shape == (15,) and weights.shape == (2, 4, 17, 17)
        right += int(np.argmax(probabilities) == label)
        corner.append(weights[0, :, 1, label + 2])
        cls.append(weights[1, :, 0, label + 2])
    assert right == 200
    assert np.mean(corner, 0).max() > 0.5 and np.mean(cls, 0).max() > 0.8
    with pytest.raises(ValueError, match="shape=\\(4, 4\\)"):
        model.read_image(np.zeros((4, 4)))


@pytest.mark.slow
def test_the_shipped_digits_model_reads_its_test_split_and_the_page_reading_holds_everything():
    from transformer.analysis.flow import attention_flow
    from transformer.live.images import example_image, read_image
    from transformer.training.pretrained import load_pretrained
    from transformer.training.vision import accuracy_of

    assert accuracy_of(load_pretrained("digits").model, "digits") >= 0.9
    image, label = example_image("digits", 4)
    reading = read_image("digits", image)
    assert reading.classes[label] == str(label) and reading.probabilities.sum() == pytest.approx(1, abs=1e-5)
    assert reading.rollout.shape == (17, 17) and reading.distance.shape == (2, 4)
    # flow from one token at a time, when asked (17 maximum flows, not 289): each row of the whole map
    every_flow = attention_flow(reading.weights)  # (17, 17)
    for token in (0, 5, 16):
        np.testing.assert_allclose(reading.flow(token), every_flow[token], atol=1e-12)
    assert reading.flow(5) is reading.flow(5)  # solved once
    with pytest.raises(ValueError, match="Queries run from 0 to 16"):
        reading.flow(17)
    assert reading.positions.shape == (16, 16)
    match_image, match_label = example_image("match", 5)
    np.testing.assert_array_equal(match_image, example_image("match", 5)[0])
    with pytest.raises(ValueError, match="image models are"):
        read_image("copy", image)
    with pytest.raises(ValueError, match="Received: pick=-1"):
        example_image("match", -1)


@pytest.mark.slow
def test_a_vision_training_step_is_traced_once():
    import keras

    from transformer.training.vision import VisionSpec, build_vision, vision_step

    keras.utils.set_random_seed(0)  # the weights: the next assertion holds for these, not for any
    model = build_vision(VisionSpec(task="match", d_model=16, num_heads=2, num_layers=1))
    step = vision_step(model, keras.optimizers.Adam(1e-2))
    images, labels = get_image_task("match").sample(np.random.default_rng(0), 8)
    first, second = step(tf.constant(images), tf.constant(labels)), step(tf.constant(images), tf.constant(labels))
    assert step.experimental_get_tracing_count() == 1
    assert float(second[0]) < float(first[0])


def test_a_model_reads_its_first_image_eagerly_and_the_next_ones_through_one_graph():
    """A page's first visit traces nothing; an edit of the image traces the model once (any batch), and every read
    answers what the model's own eager call answers."""
    from transformer.training.vision import PretrainedVision, VisionSpec, build_vision

    spec = VisionSpec(task="match", d_model=16, num_heads=2, num_layers=2)
    reader = PretrainedVision("m", spec, build_vision(spec), tuple(map(str, range(15))), 0.0, "/CPU:0")
    images, _ = get_image_task("match").sample(np.random.default_rng(3), 3)
    for index, image in enumerate(images):
        probabilities, attention = reader.read_image(image)
        if index == 0:
            assert reader._graph is None  # eager: nothing traced yet
        logits, weights = reader.model(image[None].astype(np.float32))  # (1, C), L × (1, H, 17, 17)
        np.testing.assert_allclose(probabilities, tf.nn.softmax(logits[0]).numpy(), atol=1e-5)
        np.testing.assert_allclose(attention["encoder"], np.stack([layer[0] for layer in weights]), atol=1e-5)
    assert reader.reads == 3 and reader._graph.experimental_get_tracing_count() == 1


@pytest.mark.slow
def test_a_vision_model_trains_saves_and_loads_to_the_same_answers(tmp_path):
    from transformer.training.vision import VisionSpec, load_vision, save_vision, train_vision

    result = train_vision(VisionSpec(task="digits", d_model=16, num_heads=2, num_layers=1, steps=3, batch=8))
    assert 0 <= result.accuracy <= 1 and [step for step, *_ in result.history] == [3]
    loaded = load_vision(save_vision(result, tmp_path / "digits"), "digits")
    image = get_image_task("digits").test_image(0)[0]
    np.testing.assert_allclose(loaded.model(image[None])[0].numpy(), result.model(image[None])[0].numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="d_model must be divisible by num_heads"):  # the spec's one rule
        VisionSpec(d_model=10, num_heads=4).validate()
    with pytest.raises(ValueError, match="pre-norm encoder with learned positions"):
        VisionSpec(norm="post").validate()


@pytest.mark.slow
def test_blacking_out_rollouts_top_patch_breaks_match_but_a_random_patch_rarely_does():
    """docs/images.md: on match, rollout from CLS points at the patches the answer needs (6 % right without its top
    one, 89 % without a random one, on 300 images); on 40 here."""
    from transformer.live.images import deletion_test

    scores = deletion_test("match", deleted=1, count=40, draws=3)
    assert scores["intact"] == 1.0 and scores["rollout"] < 0.3 < 0.7 < scores["random"]
    with pytest.raises(ValueError, match="deleted=0"):
        deletion_test("match", deleted=0)


@pytest.mark.slow
def test_a_worker_job_trains_an_image_task_and_its_kept_model_reads_images_after_a_restart(monkeypatch, tmp_path):
    """The Train page's path for an image task: a worker's job (stoppable), the model kept as ``image:<key>`` for
    every session — in memory, then from the data directory once memory has forgotten it — and read by the Images
    page's engine call."""
    from transformer.live.images import example_image, image_task, read_image
    from transformer.training import vision_kept, worker
    from transformer.training.vision import VisionSpec

    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    spec = VisionSpec(task="digits", d_model=16, num_heads=2, num_layers=1, steps=50, batch=8)
    sent, asked = [], iter(range(100))
    trained = worker.run_job(spec, "cpu", lambda kind, row: sent.append((kind, row)), lambda: next(asked) >= 4)
    assert trained.steps == 5 and sent and sent[-1] == ("progress", tuple(trained.history[-1]))  # stopped at step 5
    name = vision_kept.register_vision(spec, trained, "job0001", "digits, d_model 16", "/CPU:0")
    assert name == "image:job0001" and image_task(name) == "digits" and vision_kept.vision_label(name) == \
        "digits, d_model 16"
    image, _ = example_image(name, 3)
    probabilities, attention = vision_kept.vision_model(name, "/CPU:0").read_image(image)
    assert probabilities.shape == (10,) and attention["encoder"].shape == (1, 2, 17, 17)
    reading = read_image(name, image)
    np.testing.assert_allclose(reading.probabilities, probabilities, atol=1e-6)

    monkeypatch.setattr(vision_kept, "_kept", type(vision_kept._kept)())  # a restarted server: memory is empty
    monkeypatch.setattr(vision_kept, "_labels", {})
    assert vision_kept.vision_label(name) == "digits, d_model 16" and image_task(name) == "digits"
    np.testing.assert_allclose(read_image(name, image).probabilities, probabilities, atol=1e-6)
    for unknown in ("image:nothing", "session:job0001", "copy"):
        with pytest.raises(ValueError, match="image model"):
            image_task(unknown)
