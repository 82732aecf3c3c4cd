"""The codes of a class: the join code a teacher reads out (6 characters, none that looks like another: no 0/O,
1/I/L) and the keys that prove who is who (the teacher's, a student's): unguessable, kept only as their SHA-256."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import unicodedata

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
NICKNAME_CHARS = 24  # a nickname's length at most
KEY_BYTES = 24  # a teacher's key: 192 random bits, URL-safe text


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def digest(key: str) -> str:
    """What the store keeps of a key: its SHA-256, hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def same_key(key: str, kept_digest: str) -> bool:
    """Whether ``key`` is the one whose digest was kept (compared in constant time)."""
    return hmac.compare_digest(digest(key or ""), kept_digest)


def check_code(text: str) -> str:
    """A join code as a person types it (any case, spaces or dashes between) -> the code; ValueError naming it."""
    code = re.sub(r"[\s-]", "", str(text)).upper()
    if len(code) != CODE_LENGTH or any(character not in CODE_ALPHABET for character in code):
        shown = str(text)[:40]
        raise ValueError(f"A class's code is {CODE_LENGTH} letters and digits, such as K7RM4P. Received: {shown!r}")
    return code


# The controls that reorder text as it is shown (U+202E makes "evil.exe" of "exe.live"): never in what a class shows
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def clean_text(text: str) -> str:
    """A typed text as the class shows it to others: the bidirectional controls taken out."""
    return "".join(character for character in str(text) if character not in BIDI_CONTROLS)


def cleaned(value):
    """``value`` (JSON-like: dicts, lists, strings, numbers) with every string `clean_text`-ed."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {cleaned(key): cleaned(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [cleaned(item) for item in value]
    return value


def clean_nickname(text: str) -> str:
    """A nickname as typed -> what the class shows: printable characters only, spaces collapsed, at most
    NICKNAME_CHARS characters; "" for none (a student may stay unnamed)."""
    printable = "".join(c for c in str(text) if not unicodedata.category(c).startswith("C"))
    return " ".join(printable.split())[:NICKNAME_CHARS]
