"""Reads: artifact versions and their payloads, memory search, offload status."""
from __future__ import annotations

import heapq
import logging
from functools import reduce
from operator import or_
from typing import Optional

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import (
    Case, Count, F, FloatField, Func, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery, Value, When,
)
from django.db.models.functions import Greatest, Least
from google.adk.artifacts import artifact_util
from google.genai import types

from sessions_app.models import Session
from sessions_app.page_tokens import Page, keyset_page

from . import conf, words
from .models import USER_PREFIX, Artifact, ArtifactVersion, MemoryEvent, SessionMemory
from .naming import ArtifactKey, artifact_key

logger = logging.getLogger(__name__)

# ADK's marker for "removed by a session rewind": a version holding it loads as absent.
_REWIND_TOMBSTONE = types.Part(inline_data=types.Blob(mime_type="application/octet-stream", data=b""))
# PostgreSQL text search configuration; 0002_memory_search_index indexes the same expression.
SEARCH_CONFIG = "english"


# ---- artifacts ----------------------------------------------------------------


def artifact_versions(key: ArtifactKey) -> list[ArtifactVersion]:
    return list(
        ArtifactVersion.objects.select_related("artifact")
        .filter(**{f"artifact__{k}": v for k, v in key.as_filter().items()})
        .order_by("version")
    )


def artifact_version(key: ArtifactKey, version: Optional[int] = None) -> ArtifactVersion | None:
    """One version's row; the newest when `version` is None."""
    rows = ArtifactVersion.objects.select_related("artifact").filter(
        **{f"artifact__{k}": v for k, v in key.as_filter().items()}
    )
    if version is None:
        return rows.order_by("-version").first()
    if not isinstance(version, int) or version < 0:
        return None
    return rows.filter(version=version).first()


def artifact_keys(*, app_name: str, user_id: str, session_id: Optional[str]) -> list[str]:
    """Names readable from a session (its own and the user's), or the user's alone."""
    artifact_util.validate_path_segment(app_name, "app_name")
    artifact_util.validate_path_segment(user_id, "user_id")
    scopes = [""]
    if session_id is not None:
        artifact_util.validate_path_segment(session_id, "session_id")
        scopes.append(session_id)
    rows = Artifact.objects.filter(app_name=app_name, user_id=user_id, session_id__in=scopes)
    return sorted(a.key for a in rows)


def artifact_payload(row: ArtifactVersion) -> bytes | None:
    if not row.payload:
        return b"" if row.kind != ArtifactVersion.KIND_FILE else None
    try:
        with row.payload.open("rb") as handle:
            return handle.read()
    except OSError:
        logger.warning("Artifact payload %s is missing", row.payload.name)
        return None


def artifact_part(row: ArtifactVersion) -> types.Part | None:
    """The part exactly as saved (references are not followed here)."""
    part = types.Part.model_validate(row.part)
    if row.kind == ArtifactVersion.KIND_FILE:
        return part
    data = artifact_payload(row)
    if data is None:
        return None
    if row.kind == ArtifactVersion.KIND_TEXT:
        part.text = data.decode("utf-8")
    else:
        part.inline_data.data = data
    return part


def artifact_load(
    key: ArtifactKey, version: Optional[int] = None, *, depth: int = artifact_util._MAX_ARTIFACT_REFERENCE_DEPTH
) -> types.Part | None:
    """ADK's `load_artifact`: follows `artifact://` references (bounded), and a
    version holding a rewind tombstone loads as absent."""
    row = artifact_version(key, version)
    if row is None:
        return None
    part = artifact_part(row)
    if part is None or part == types.Part() or part == _REWIND_TOMBSTONE:
        return None
    if not artifact_util.is_artifact_ref(part):
        return part
    target = artifact_util.resolve_artifact_reference(
        file_uri=part.file_data.file_uri, app_name=key.app_name, user_id=key.user_id,
        session_id=key.session_id or None, remaining_depth=depth,
    )
    target_key = artifact_key(
        app_name=target.app_name, user_id=target.user_id, filename=target.filename, session_id=target.session_id
    )
    return artifact_load(target_key, target.version, depth=depth - 1)


def canonical_uri(row: ArtifactVersion) -> str:
    """The `artifact://` URI of one version, which a reference part can point at. A user-scoped
    name keeps its `user:` prefix, as in ADK's other services' URIs: without it, they read the name
    as session-scoped."""
    a = row.artifact
    filename = a.filename if a.session_id else USER_PREFIX + a.filename
    return artifact_util.get_artifact_uri(a.app_name, a.user_id, filename, row.version, a.session_id or None)


ARTIFACTS_PAGE = 50  # artifacts the panel lists at a time; "more artifacts" loads the next
# Its own first, then its user's, by name: unique among the artifacts one session can read.
ARTIFACT_ORDER = ("-session_id", "filename")


def _readable(session: Session) -> QuerySet[Artifact]:
    """The artifacts a session can read: its own and its user's (`user:`)."""
    return Artifact.objects.filter(app_name=session.app.name, user_id=session.user_id,
                                   session_id__in=["", session.session_id])


def session_artifact_page(session: Session, *, size: int, token: str | None = None) -> Page[Artifact]:
    """A page of the artifacts a session can read, each with `version_count` and `latest_version`
    (subqueries per artifact listed, not its versions loaded)."""
    versions = ArtifactVersion.objects.filter(artifact=OuterRef("pk")).order_by()
    counted = versions.values("artifact").annotate(n=Count("pk")).values("n")
    rows = _readable(session).annotate(
        version_count=Subquery(counted, output_field=IntegerField()),
        latest_version=Subquery(versions.order_by("-version").values("version")[:1]),
    )
    return keyset_page(rows, order=ARTIFACT_ORDER, size=size, token=token)


def session_artifact_count(session: Session) -> int:
    return _readable(session).count()


def session_artifact(session: Session, name: str) -> Artifact | None:
    """The artifact the session reads under `name` (`user:` for its user's), with its versions."""
    user_scoped = name.startswith(USER_PREFIX)
    found = _readable(session).filter(
        session_id="" if user_scoped else session.session_id, filename=name.removeprefix(USER_PREFIX)
    )
    versions = Prefetch("versions", queryset=ArtifactVersion.objects.order_by("version"))
    return found.prefetch_related(versions).first()


# ---- memory -------------------------------------------------------------------


def memory_search(
    *, app_name: str, user_id: str, query: str, limit: Optional[int] = None
) -> list[tuple[MemoryEvent, float]]:
    """Memories of one user of one app, best match first, with their scores.

    PostgreSQL matches with its full-text search (English stemming, the GIN
    index); elsewhere a memory matches when it holds a query word as a whole
    word (ADK's in-memory rule). Scores are in (0, 1]: a memory holding more
    of the query's words first, then the one those words make up more of
    (`words.relevance`; PostgreSQL approximates the second part with distinct
    stemmed lexemes, not word occurrences). Among equal scores, in the order they were added,
    as ADK's in-memory service answers (its only order).
    """
    limit = limit or conf.memory_max_results()
    terms = words.query_words(query)
    if not terms:
        return []
    rows = MemoryEvent.objects.for_user(app_name=app_name, user_id=user_id).select_related("source_session")
    if connection.vendor == "postgresql":
        return _search_full_text(rows, terms, limit)
    return _search_keywords(rows, terms, limit)


def _search_full_text(rows: QuerySet[MemoryEvent], terms: list[str], limit: int) -> list[tuple[MemoryEvent, float]]:
    # words.relevance's score in SQL, on stemmed lexemes: the share of the
    # query's words a memory holds, then the share of its lexemes they make up.
    queries = [SearchQuery(t, config=SEARCH_CONFIG) for t in terms]
    matched = sum((Case(When(document=q, then=Value(1.0)), default=Value(0.0)) for q in queries), Value(0.0))
    lexemes = Greatest(Func(F("document"), function="length", output_field=FloatField()), Value(1.0))
    found = (
        rows.annotate(document=SearchVector("search_text", config=SEARCH_CONFIG))
        .filter(document=reduce(or_, queries))
        .annotate(matched=matched)
        .annotate(rank=F("matched") / len(terms) * (1 + Least(F("matched") / lexemes, Value(1.0))) / 2)
        .order_by("-rank", "pk")[:limit]
    )
    return [(row, float(row.rank)) for row in found]


def _search_keywords(rows: QuerySet[MemoryEvent], terms: list[str], limit: int) -> list[tuple[MemoryEvent, float]]:
    # SQL narrows to rows containing some term anywhere; Python then scores
    # whole-word matches so "thon" does not match "python".
    candidates = rows.filter(reduce(or_, (Q(search_text__contains=t) for t in terms)))
    scored = (
        (words.relevance(terms, text), index, pk)
        for index, (pk, text) in enumerate(candidates.order_by("pk").values_list("pk", "search_text"))
    )
    best = heapq.nsmallest(limit, ((-score, index, pk) for score, index, pk in scored if score))
    by_pk = rows.in_bulk([pk for _, _, pk in best])
    return [(by_pk[pk], float(-neg)) for neg, _, pk in best]


def session_memory(session: Session) -> SessionMemory | None:
    return SessionMemory.objects.filter(session=session).first()


def memory_count(*, app_name: str, user_id: str) -> int:
    return MemoryEvent.objects.for_user(app_name=app_name, user_id=user_id).count()
