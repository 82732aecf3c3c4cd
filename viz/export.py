"""Figure data as downloadable bytes: CSV for one matrix, NPZ for several arrays."""

from __future__ import annotations

import csv
import io

import numpy as np


def matrix_csv(matrix, row_labels=None, column_labels=None) -> bytes:
    """A 2-D array as CSV with a header row and a label column."""
    matrix = np.asarray(matrix)
    rows = row_labels if row_labels is not None else [str(i) for i in range(matrix.shape[0])]
    columns = column_labels if column_labels is not None else [str(j) for j in range(matrix.shape[1])]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([""] + list(columns))
    for label, values in zip(rows, matrix.tolist()):
        writer.writerow([label] + values)
    return buffer.getvalue().encode("utf-8")


def arrays_npz(**arrays) -> bytes:
    """Several arrays in one compressed ``.npz`` (load with ``np.load(..., allow_pickle=False)``)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{name: np.asarray(value) for name, value in arrays.items()})
    return buffer.getvalue()
