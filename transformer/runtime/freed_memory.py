"""Giving freed memory back to the system after a large load, so that the server's resident memory is what it holds."""

from __future__ import annotations

import ctypes
import gc


def give_back_freed_memory() -> None:
    """Collect garbage, then return the C heap's free pages to the system (glibc's ``malloc_trim``; elsewhere
    nothing). Freed arrays otherwise stay resident: SmolLM2's dequantised file (~175 MB) after its load, and ~53 MB
    after its trace (BENCHMARKS.md, "A real language model")."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
