"""How many trained models this server keeps, read from the environment: a positive number, else its default and a
sentence that says so (shown on every page: `limit_problems`)."""

from __future__ import annotations

from transformer.runtime.data_dir import positive

SESSION_MODELS_KEPT = 8  # default of ATTENTION_LAB_MODELS_KEPT
SESSION_MODELS_MB = 256  # default of ATTENTION_LAB_MODELS_MB: the kept models' weights, together


def kept_limits() -> tuple[int, float]:
    """(models, MB of weights) this server keeps of those trained in sessions: ATTENTION_LAB_MODELS_KEPT and
    ATTENTION_LAB_MODELS_MB, else `SESSION_MODELS_KEPT` and `SESSION_MODELS_MB` (a bad value: the default, and
    `limit_problems` says so)."""
    return tuple(value for value, _ in _read_limits())


def limit_problems() -> list[str]:
    """What is wrong with ATTENTION_LAB_MODELS_KEPT and ATTENTION_LAB_MODELS_MB (each naming the value and the
    default used instead); empty when both are unset or good."""
    return [problem for _, problem in _read_limits() if problem]


def _read_limits() -> list[tuple]:
    """(value, problem or "") of each kept-models limit; a bad value reads as its default."""
    return [positive("ATTENTION_LAB_MODELS_KEPT", SESSION_MODELS_KEPT, int, "a whole number"),
            positive("ATTENTION_LAB_MODELS_MB", SESSION_MODELS_MB, float, "a number of megabytes")]
