"""Search the events of an app by content: text, tools (names, args, responses) and state deltas.

The index is the database's own (migrations 0008, 0017, 0018): FTS5 on SQLite, a GIN index
over a tsvector on PostgreSQL. A query is parsed here into terms of letters
and digits only, so no user input ever reaches FTS5's or to_tsquery's syntax:

    refund order      both words, anywhere in the event
    "refund policy"   the words next to each other
    ref*              a word starting with "ref"

Punctuation separates words, as it does in the index: `order_id` and `A-17`
are searched as the phrases "order id" and "a 17". Snippets and what matched
(text, tool, state) are worked out here from the event JSON, the same way on
both databases, and escaped before the only markup we add, `<mark>`.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchVectorField
from django.db import NotSupportedError, connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from . import page_tokens
from .models import App, Event, Session

MAX_QUERY_CHARS = 500
MAX_TERMS = 16
MAX_FIELD_CHARS = 100_000  # what the index holds of an event (migration 0008)
SNIPPET_CHARS = 180
KINDS = ("text", "tool", "state")

WORD_CHAR = r"[^\W_]"  # a letter or digit; a query needs one (the schema's pattern for `q`)
_WORD = re.compile(WORD_CHAR + "+")  # letters and digits: the tokens of FTS5's unicode61 and of our PostgreSQL index
_TERM = re.compile(r'"(?P<phrase>[^"]*)"(?P<star>\*?)|(?P<word>[^\s"]+)')  # a lone quote is skipped
_FTS = "sessions_app_event_search"
_SPACE = re.compile(r"\s+")


class QueryError(ValueError):
    """A query that cannot be searched; the message says why, for the `q` field."""


@dataclass(frozen=True)
class Term:
    """Words that must appear in this order, next to each other; the last one
    may be only the start of a word (`prefix`)."""

    words: tuple[str, ...]
    prefix: bool = False


def parse_query(text: str) -> tuple[Term, ...]:
    """The terms of a user's query. Quotes left open, operators of FTS5 or
    tsquery, control characters and punctuation are plain separators here; the
    only refusals are QueryError: too long, too many terms, no word at all."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"is {len(text)} characters long; at most {MAX_QUERY_CHARS} can be searched.")
    text = text.encode("utf-8", "ignore").decode("utf-8")  # lone surrogates
    found = [(match["word"] == "AND", _term(match)) for match in _TERM.finditer(text)]
    # "a AND b" means what "a b" does; "AND" alone, or quoted, is a word.
    terms = [t for is_and, t in found if t and not is_and] or [t for _, t in found if t]
    if not terms:
        raise QueryError("has no word to search for: letters or digits.")
    if len(terms) > MAX_TERMS:
        raise QueryError(f"has {len(terms)} words or phrases; at most {MAX_TERMS} can be searched at once.")
    return tuple(terms)


def _term(match: re.Match[str]) -> Term | None:
    raw = match["word"] if match["word"] is not None else match["phrase"]
    prefix = bool(match["star"]) if match["word"] is None else raw.endswith("*")
    words = tuple(_WORD.findall(raw.lower()))
    return Term(words, prefix) if words else None


# ---- the query, per database ----------------------------------------------------


def _fts5_match(terms: tuple[Term, ...]) -> str:
    # Each term is an FTS5 string of words (no quote can be inside one), ANDed.
    return " ".join(f'"{" ".join(t.words)}"' + (" *" if t.prefix else "") for t in terms)


def _tsquery(term: Term) -> SearchQuery:
    if not term.prefix:
        return SearchQuery(" ".join(term.words), config="simple", search_type="phrase")
    # to_tsquery syntax, built only from words of letters and digits.
    raw = " <-> ".join(f"'{w}'" for w in term.words) + ":*"
    return SearchQuery(raw, config="simple", search_type="raw")


def _matching(terms: tuple[Term, ...]) -> QuerySet[Event]:
    """Matching events on PostgreSQL (SQLite's query is `_sqlite_hit_ids`)."""
    if connection.vendor == "postgresql":
        query = _tsquery(terms[0])
        for term in terms[1:]:
            query &= _tsquery(term)
        # The stored vector the GIN index is built on (migration 0017), so the index answers,
        # and an event walked past costs no computing of its vector.
        vector = RawSQL(f"{Event._meta.db_table}.search", [], output_field=SearchVectorField())
        return Event.objects.alias(search=vector).filter(search=query)
    raise NotSupportedError(f"Event search needs SQLite or PostgreSQL, not {connection.vendor}.")


# ---- hits -----------------------------------------------------------------------


@dataclass(frozen=True)
class Snippet:
    kind: str  # one of KINDS
    html: SafeString
    matched: bool


@dataclass(frozen=True)
class Hit:
    session: Session
    seq: int
    author: str
    timestamp: float
    snippets: tuple[Snippet, ...]

    @property
    def matched(self) -> tuple[str, ...]:
        return tuple(s.kind for s in self.snippets if s.matched)


@dataclass(frozen=True)
class SearchResults:
    hits: list[Hit]  # HIT_ORDER
    total: int  # matching events, counted up to COUNT_CAP + 1
    terms: tuple[Term, ...]
    next_token: str = ""  # where the next page starts (page_tokens); "" on the last page

    @property
    def capped(self) -> bool:
        """Whether more than COUNT_CAP events match: `total` is then only a floor."""
        return self.total > COUNT_CAP

    @property
    def shown_total(self) -> int:
        return min(self.total, COUNT_CAP)

    @property
    def by_session(self) -> list[tuple[Session, list[Hit]]]:
        """The page's hits by session, as a reader follows them: sessions by their newest hit,
        each one's hits in the order they happened."""
        groups: dict[int, list[Hit]] = {}
        for hit in self.hits:
            groups.setdefault(hit.session.pk, []).append(hit)
        return [(found[0].session, sorted(found, key=lambda h: h.seq)) for found in groups.values()]


# Newest stored event first: the order both indexes can give without sorting every hit
# (FTS5 walks its rowids, the event pks, backwards; PostgreSQL reads the pk index backwards
# for a common word or sorts the few hits of a rare one, told apart by the statistics of
# migration 0015), so a word in half of all events costs about what a rare one does.
HIT_ORDER = ("-pk",)
# Counting every hit of a common word would read all of them (on PostgreSQL, working out each
# one's text vector): the count stops past this many.
COUNT_CAP = 100


def search_events(
    app: App, query: str, *, user_id: str | None = None, limit: int = 20, offset: int = 0, after: str | None = None
) -> SearchResults:
    """Events of `app` (of one user's sessions with `user_id`) matching `query`, in HIT_ORDER:
    the `limit` after the position `after` (a keyset page: a deep page costs what the first
    does), or after skipping `offset` of them (the API's older form). Raises QueryError for a
    query with nothing to search, ValueError for an `after` no page wrote."""
    terms = parse_query(query)
    below = _below(after) if after else None
    limit, offset = max(limit, 0), max(offset, 0)
    ids = _hit_ids(terms, app, user_id, below=below, skip=offset, take=limit + 1)
    total = _hit_ids(terms, app, user_id, count=True, take=COUNT_CAP + 1)
    more = len(ids) > limit and not offset
    ids = ids[:limit]
    rows = Event.objects.select_related("session").in_bulk(ids)
    hits = [_hit(rows[pk], terms) for pk in ids if pk in rows]
    return SearchResults(hits, total, terms, page_tokens.encode([ids[-1]]) if more else "")


def _below(token: str) -> int:
    (pk,) = page_tokens.position(token, 1)
    if not isinstance(pk, int):
        raise ValueError(token)
    return pk


def _hit_ids(terms: tuple[Term, ...], app: App, user_id: str | None, *, below: int | None = None,
             skip: int = 0, take: int, count: bool = False) -> Any:
    """The pks of matching events in HIT_ORDER (below the pk `below`), or with `count`, how many
    of them there are up to `take`."""
    if connection.vendor == "sqlite":
        return _sqlite_hit_ids(terms, app, user_id, below=below, skip=skip, take=take, count=count)
    events = _matching(terms).filter(session__app=app)
    if user_id:
        events = events.filter(session__user_id=user_id)
    if below is not None:
        events = events.filter(pk__lt=below)
    if count:
        return events[:take].count()
    return list(events.order_by(*HIT_ORDER).values_list("pk", flat=True)[skip : skip + take])


def _sqlite_hit_ids(terms: tuple[Term, ...], app: App, user_id: str | None, *, below: int | None,
                    skip: int, take: int, count: bool) -> Any:
    # The index drives: its rowids (the event pks) backwards, those holding the words and the
    # app's token (migration 0018), which FTS5 intersects itself; one user's are told by a join.
    # (`pk IN (SELECT rowid ... MATCH)` would first read every hit.)
    match = f"{{body}} : ({_fts5_match(terms)}) AND app : \"app{int(app.pk)}\""
    sql = f"SELECT f.rowid FROM {_FTS} AS f"
    params: list[Any] = [match]
    if user_id:
        sql += (f" JOIN {Event._meta.db_table} AS e ON e.id = f.rowid"
                f" JOIN {Session._meta.db_table} AS s ON s.id = e.session_id")
    sql += f" WHERE {_FTS} MATCH %s"
    if user_id:
        sql += " AND s.user_id = %s"
        params.append(user_id)
    if below is not None:
        sql += " AND f.rowid < %s"
        params.append(below)
    sql += " ORDER BY f.rowid DESC LIMIT %s OFFSET %s"
    params += [take, skip]
    if count:
        sql = f"SELECT COUNT(*) FROM ({sql})"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = [row[0] for row in cursor.fetchall()]
    return found[0] if count else found


def _hit(event: Event, terms: tuple[Term, ...]) -> Hit:
    snippets = [_snippet(kind, text, terms) for kind, text in _fields(event.data).items() if text]
    found = [s for s in snippets if s.matched]
    # A phrase that ran from one field into the next matches no field alone: show the first.
    return Hit(event.session, event.seq, event.author, event.timestamp, tuple(found or snippets[:1]))


def _fields(data: Any) -> dict[str, str]:
    """What the index holds of an event, by kind, as a reader would want to see it."""
    data = data if isinstance(data, dict) else {}
    parts = _dig(data, "content", "parts", default=[])
    parts = [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    text = [p["text"] for p in parts if isinstance(p.get("text"), str)]
    if isinstance(data.get("error_message"), str):
        text.append(data["error_message"])
    tools = []
    for part in parts:
        if isinstance(call := part.get("function_call"), dict):
            tools.append(f"{call.get('name', '')}({_compact(call.get('args', {}))})")
        if isinstance(response := part.get("function_response"), dict):
            tools.append(f"{response.get('name', '')} → {_compact(response.get('response', {}))}")
    delta = _dig(data, "actions", "state_delta", default={})
    state = [f"{key} = {_compact(value)}" for key, value in delta.items()] if isinstance(delta, dict) else []
    return {"text": "\n".join(text), "tool": "\n".join(tools), "state": "\n".join(state)}


def _dig(data: dict[str, Any], *path: str, default: Any) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return default if data is None else data


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# ---- highlighting ---------------------------------------------------------------------


def _spans(text: str, terms: tuple[Term, ...]) -> list[tuple[int, int]]:
    """Where in `text` the terms occur, as (start, end) character spans, merged and in order."""
    tokens = list(_WORD.finditer(text))
    words = [t.group().lower() for t in tokens]
    positions: dict[str, list[int]] = defaultdict(list)
    for i, word in enumerate(words):
        positions[word].append(i)
    found = []
    for term in terms:
        for i in _occurrences(term, positions, words):
            found.append((tokens[i].start(), tokens[i + len(term.words) - 1].end()))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _occurrences(term: Term, positions: dict[str, list[int]], words: list[str]) -> Iterator[int]:
    """Token positions where `term` starts, found from its first word's positions."""
    first, *rest = term.words
    if not rest:
        keys = [w for w in positions if w.startswith(first)] if term.prefix else [first]
        for key in keys:
            yield from positions.get(key, [])
        return
    *middle, last = rest
    for i in positions.get(first, []):
        following = words[i + 1 : i + len(term.words)]
        if len(following) == len(rest) and following[:-1] == middle and (
            following[-1].startswith(last) if term.prefix else following[-1] == last
        ):
            yield i


def _snippet(kind: str, text: str, terms: tuple[Term, ...]) -> Snippet:
    text = text[:MAX_FIELD_CHARS]
    spans = _spans(text, terms)
    # The first hit a third of the way in, or as far in as the end of the text lets it be.
    start = max(0, min(spans[0][0] - SNIPPET_CHARS // 3, len(text) - SNIPPET_CHARS)) if spans else 0
    if start and (space := _SPACE.search(text, start, spans[0][0])):
        start = space.end()  # begin at a word
    end = min(len(text), start + SNIPPET_CHARS)
    return Snippet(kind, _marked(text, spans, start, end), bool(spans))


def _marked(text: str, spans: list[tuple[int, int]], start: int, end: int) -> SafeString:
    """text[start:end], escaped, with each span in <mark>: the only markup in it."""
    pieces = ["…"] if start else []
    at = start
    for s, e in spans:
        s, e = max(s, start), min(e, end)
        if s >= e:
            continue
        pieces += [_plain(text[at:s]), "<mark>", _plain(text[s:e]), "</mark>"]
        at = e
    pieces.append(_plain(text[at:end]))
    if end < len(text):
        pieces.append("…")
    return mark_safe("".join(pieces))  # noqa: S308 - every piece of stored text went through escape()


def _plain(text: str) -> str:
    return escape(_SPACE.sub(" ", text))

