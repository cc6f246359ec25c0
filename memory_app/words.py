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


def relevance(words: list[str], text: str) -> float:
    """How well the (normalised) text answers the query words: 0 when it holds none, at most 1.

    A word counts when the text holds it as a whole word; a word outside
    ASCII may also sit inside a longer token, since scripts such as Chinese
    have no spaces to split words at. The score is mostly the share of the
    query's words the text holds, so a memory with every word beats one with
    some; then how much of the text those words make up, so among equal
    shares the focused memory beats a long one mentioning them in passing
    (counting words alone scored every match of a one-word query 1.0).
    """
    tokens = _WORD.findall(text)
    vocabulary = set(tokens)
    whole = {w for w in words if w in vocabulary}
    inside = [w for w in words if w not in whole and not w.isascii() and w in text]
    if not whole and not inside:
        return 0.0
    hits = sum(1 for t in tokens if t in whole) + sum(text.count(w) for w in inside)
    focus = min(1.0, hits / max(len(tokens), 1))
    return (len(whole) + len(inside)) / len(words) * (1 + focus) / 2
