"""The words of a remembered event and of a query, as memory search compares them.

Like ADK's memory services: only text parts count (not thoughts, not tool
calls), text is NFC-normalised and lowercased, and a word mixing Latin with
another script (Japanese writes "私はPythonを使う" without spaces) is also split
at the script boundary so the Latin word can be found on its own.
"""
from __future__ import annotations

import itertools
import re
import unicodedata
from typing import Any

_WORD = re.compile(r"\w+")


def _is_latin(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum() or ch == "_"
    return unicodedata.name(ch, "").startswith("LATIN")


def _split_scripts(text: str) -> str:
    if text.isascii():
        return text
    pieces: list[str] = []
    for word in text.split():
        if word.isascii():
            pieces.append(word)
        else:
            pieces.extend("".join(run) for _, run in itertools.groupby(word, _is_latin))
    return " ".join(pieces)


def normalise(text: str) -> str:
    return _split_scripts(unicodedata.normalize("NFC", text)).lower()


def content_text(content: dict[str, Any] | None) -> str:
    """The plain text of a stored `types.Content` JSON: text parts, no thoughts."""
    parts = (content or {}).get("parts") or []
    texts = [p["text"].replace("\n", " ").strip() for p in parts if p.get("text") and not p.get("thought")]
    return " ".join(t for t in texts if t)


def search_text(content: dict[str, Any] | None) -> str:
    return normalise(content_text(content))


def query_words(query: str) -> list[str]:
    """Distinct words of a query, in order."""
    return list(dict.fromkeys(_WORD.findall(normalise(query or ""))))


def keyword_score(words: list[str], text: str) -> int:
    """How many distinct query words the (normalised) text holds as whole words.

    A word outside ASCII may also match inside a longer token, since scripts
    such as Chinese have no spaces to split words at.
    """
    tokens = set(_WORD.findall(text))
    return sum(1 for w in words if w in tokens or (not w.isascii() and w in text))
