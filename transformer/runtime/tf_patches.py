"""Every use of TensorFlow's and Keras's private internals in the engine, in one place.

| patch | what it touches | why (measured) | if TensorFlow changes it | guarded by |
| --- | --- | --- | --- | --- |
| `quiet_retracing_warning` | ``tf.function``'s ``_omit_frequent_tracing_warning`` | six architectures traced once each read as "retracing" in the server's log (the warning keys on the shared traced code) | the warning comes back in the log; nothing else | tests/unit/test_live.py::test_model_functions_that_each_trace_once_raise_no_retracing_warning |
| `clear_kernel_cache` | ``tensorflow.python.eager.context.context().clear_kernel_cache()`` | every architecture a user tried kept ~7 MB of kernels for good (BENCHMARKS.md, churn test) | the server's memory grows with each architecture tried | tests/unit/test_live.py::test_tensorflow_still_has_the_private_calls_the_engine_uses |
| `recording_attention` | an instance's ``keras.layers.MultiHeadAttention._compute_attention`` (the override point Keras's docstring offers subclasses), ``Layer._flatten_layers``, and for keras-hub's own attention layers (Llama, Mistral, Gemma, Qwen) their ``keras.layers.Softmax`` sublayer's ``call`` | a model loaded from outside (keras-hub, a ``.keras`` file) computes its attention inside its own layers, which return no weights unless their caller asks: the wrapper asks (``return_attention_scores=True``) and keeps them, for one run | the weights of a model from outside are not read (a test fails; the lab's own model is untouched) | tests/unit/test_external.py |
| `keras_dense_sublayers` | ``keras.layers.GroupQueryAttention``'s ``_query_dense`` … ``_output_dense`` | the reference check copies this engine's weights into Keras's grouped-query layer, which has no public accessor for its projections (``MultiHeadAttention`` has public ones) | the Keras check of fewer key/value heads fails with an AttributeError (the pages say so; the engine runs) | tests/unit/test_variants.py::test_grouped_query_attention_agrees_with_keras_group_query_attention |
| `variables_never_allocated` | Keras's ``global_state`` attribute ``"uninitialized_variables"`` (the list a ``keras.StatelessScope`` fills with the variables it defers) | an uploaded ``.keras`` file's declared weights are counted by building its model with none allocated (a 6 KB file declared 2 GB and the server kept 4 GB after refusing it, issue 77); the scope leaves its variables on Keras's list, and the next top-level scope would allocate them all | the upload check fails with a KeyError or allocates what it counts (a test fails) | tests/unit/test_untrusted_files.py::test_counting_declared_weights_leaves_nothing_for_keras_to_allocate |
| `keras_without_scikit_learn` | the import system while ``keras`` (and with it TensorFlow) is first imported: ``sklearn`` cannot be found then | Keras's scikit-learn wrappers import scikit-learn, and it SciPy, when it is installed (the digits task needs it): ~1 s of every process's start and ~58 MB of its memory, for wrappers the engine never uses (docs/performance.md) | nothing: Keras's wrappers would say scikit-learn is missing if called; the digits task imports it later as usual | tests/unit/test_device.py::test_the_engine_import_makes_the_cpu_allocator_a_pool_and_leaves_scikit_learn_out |

Nothing else in ``transformer/`` reaches below TensorFlow's and Keras's public APIs.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys


class _NoScikitLearn(importlib.abc.MetaPathFinder):
    """Finds no ``sklearn`` module: Keras's ``try: import sklearn`` then takes it as not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ModuleNotFoundError(f"No module named {name!r} while Keras is imported", name=name)
        return None


def keras_without_scikit_learn() -> None:
    """Import Keras (and TensorFlow) with scikit-learn out of reach, unless Keras is imported already."""
    if "keras" in sys.modules:
        return
    finder = _NoScikitLearn()
    sys.meta_path.insert(0, finder)
    try:
        import keras  # noqa: F401, PLC0415
    finally:
        sys.meta_path.remove(finder)


keras_without_scikit_learn()

import keras  # noqa: E402  (imported above, without scikit-learn)


def quiet_retracing_warning(function) -> None:
    """Keep TensorFlow's "N of the last N calls triggered retracing" warning off one ``tf.function``: each
    `ModelFunction` traces once and counts its traces itself."""
    function._omit_frequent_tracing_warning = True


def keras_dense_sublayers(layer) -> list:
    """The query, key, value and output projections (``EinsumDense``) of a Keras ``MultiHeadAttention`` (public
    attributes) or ``GroupQueryAttention`` (private ones)."""
    prefix = "_" if isinstance(layer, keras.layers.GroupQueryAttention) else ""
    return [getattr(layer, prefix + name) for name in ("query_dense", "key_dense", "value_dense", "output_dense")]


def all_sublayers(model) -> list:
    """Every layer inside ``model``, nested ones included, in the order they were made (Keras's own
    ``_flatten_layers``: a layer's sublayers have no public list)."""
    return list(model._flatten_layers(include_self=False))


def attention_sublayers(model) -> list:
    """Every ``keras.layers.MultiHeadAttention`` (subclasses included) inside ``model``, in the order made."""
    return [layer for layer in all_sublayers(model) if isinstance(layer, keras.layers.MultiHeadAttention)]


def own_attention_layers(model) -> list:
    """Attention layers of a model's own (keras-hub's Llama, Mistral, Gemma, Qwen …): the outermost layers whose
    class name ends in "Attention" and that hold one ``keras.layers.Softmax``, in the order made."""
    found = []
    for layer in all_sublayers(model):
        if type(layer).__name__.endswith("Attention") and len(_softmaxes(layer)) == 1 \
                and not any(layer in all_sublayers(outer) for outer in found):
            found.append(layer)
    return found


def _softmaxes(layer) -> list:
    return [sub for sub in all_sublayers(layer) if isinstance(sub, keras.layers.Softmax)]


@contextlib.contextmanager
def recording_attention(layers):
    """While in the block, each of ``layers`` computes its weights explicitly and appends ``(its index, weights
    (B, H, N_q, N_k), mask)`` to the yielded list each time it runs: a ``MultiHeadAttention`` through its
    ``_compute_attention`` (``mask``: the ``(B, N_q, N_k)`` attention mask it was given, its causal mask included,
    or None), another attention layer through its Softmax's output (grouped heads ``(B, K, G, …)`` flattened to
    the query heads, ``k·G + g``; ``mask`` None)."""
    recorded = []

    def recorder(index, original):
        def compute(query, key, value, attention_mask=None, training=None, return_attention_scores=False, **kwargs):
            output, weights = original(query, key, value, attention_mask=attention_mask, training=training,
                                       return_attention_scores=True, **kwargs)
            recorded.append((index, weights, attention_mask))
            return output, weights
        return compute

    def softmax_recorder(index, original):
        def call(*args, **kwargs):
            weights = original(*args, **kwargs)
            shape = keras.ops.shape(weights)
            recorded.append((index, keras.ops.reshape(weights, (shape[0], -1, shape[-2], shape[-1])), None))
            return weights
        return call

    patched = []
    for index, layer in enumerate(layers):
        if isinstance(layer, keras.layers.MultiHeadAttention):
            target, name, wrapper = layer, "_compute_attention", recorder(index, layer._compute_attention)
        else:
            (target,), name = _softmaxes(layer), "call"
            wrapper = softmax_recorder(index, target.call)
        object.__setattr__(target, name, wrapper)
        patched.append((target, name))
    try:
        yield recorded
    finally:
        for target, name in patched:
            target.__dict__.pop(name, None)


def clear_kernel_cache() -> None:
    """Drop the kernels TensorFlow made for every op and traced graph run so far (no public API does)."""
    from tensorflow.python.eager import context  # noqa: PLC0415  (private; imported only when used)

    context.context().clear_kernel_cache()


@contextlib.contextmanager
def variables_never_allocated():
    """Yield a list that, once the block ends, holds every Keras variable created in it, none allocated: a
    ``keras.StatelessScope`` that does not initialise on exit, whose variables are then taken off Keras's list of
    variables waiting to be initialised (the next top-level stateless scope would allocate them)."""
    from keras.src.backend.common import global_state  # noqa: PLC0415

    name = "uninitialized_variables"
    waiting = list(global_state.get_global_attribute(name, [], set_to_default=True))
    created: list = []
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield created
    finally:
        now = global_state.get_global_attribute(name, [])
        created.extend(variable for variable in now if not any(variable is old for old in waiting))
        global_state.set_global_attribute(name, waiting)

