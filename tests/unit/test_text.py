"""How the pages write numbers: a share never reads 0 % or 100 % unless it is exactly that (#52.14)."""

import pytest

from ui.text import percent


@pytest.mark.parametrize("share, text", [
    (0.0, "0%"), (1.0, "100%"), (0.5, "50%"), (0.123, "12%"), (0.9988, "99.9%"), (0.99996, "99.996%"),
    (0.0004, "0.04%"), (0.004, "0.4%"), (0.99999999, "> 99.999%"), (1e-9, "< 0.001%"), (0.996, "99.6%"),
])
def test_a_share_is_written_without_rounding_to_none_or_all(share, text):
    assert percent(share) == text
