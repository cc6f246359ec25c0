"""Search an app's events by content (not in ADK's server): the search page's hits as JSON."""
from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from .. import search, selectors
from .base import AdkApi, _require_app, _validated

SEARCH_PAGE_MAX = 100


@extend_schema_serializer(component_name="EventSearchSnippet")
class SnippetSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=search.KINDS)
    html = serializers.CharField(help_text="Escaped text; the words that matched are in <mark>.")
    matched = serializers.BooleanField()


@extend_schema_serializer(component_name="EventSearchHit")
class HitSerializer(serializers.Serializer):
    sessionId = serializers.CharField()
    userId = serializers.CharField()
    seq = serializers.IntegerField(help_text="The event's sequence number in its session.")
    author = serializers.CharField(allow_blank=True)
    timestamp = serializers.FloatField()
    matched = serializers.ListField(child=serializers.CharField(), help_text="Kinds of snippet the query matched.")
    snippets = SnippetSerializer(many=True)


class EventSearchApi(AdkApi):
    class InputSerializer(serializers.Serializer):
        q = serializers.CharField(max_length=search.MAX_QUERY_CHARS, trim_whitespace=True,
                                  validators=[RegexValidator(search.WORD_CHAR, "Has no word to search for: letters or digits.")],
                                  help_text='Words (all must match), "quoted phrases", prefix*: at least one letter or digit.')
        user_id = serializers.CharField(required=False, default="", help_text="Only this user's sessions.")
        limit = serializers.IntegerField(min_value=1, max_value=SEARCH_PAGE_MAX, default=20)
        offset = serializers.IntegerField(min_value=0, max_value=1_000_000, default=0,
                                          help_text="Skip this many hits (scans past them); `page_token` does not.")
        page_token = serializers.CharField(required=False, allow_blank=True, help_text=(
            "The previous page's `nextPageToken`: the page after it, keyset (every page costs the first's). "
            "Blank: the first page."))

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if attrs["offset"] and attrs.get("page_token"):
                raise ValidationError({"page_token": ["Not with offset: a page token names where its page starts."]})
            return attrs

    @extend_schema_serializer(component_name="EventSearchResults")
    class OutputSerializer(serializers.Serializer):
        total = serializers.IntegerField(help_text=(
            f"Events matching, over every page, counted up to {search.COUNT_CAP}; "
            f"with `totalCapped`, more than that."))
        totalCapped = serializers.BooleanField(help_text=(
            f"More than {search.COUNT_CAP} events match; `total` is then {search.COUNT_CAP}."))
        hits = HitSerializer(many=True, help_text="Newest stored event first.")
        nextPageToken = serializers.CharField(
            required=False, help_text="The `page_token` of the next page; absent on the last page (and with `offset`)."
        )

    @extend_schema(operation_id="event_search", tags=["events"], parameters=[InputSerializer],
                   responses={200: OutputSerializer})
    def get(self, request: Request, app_name: str) -> Response:
        """Events of the app whose text, tool calls and responses, or state changes match `q`."""
        query = _validated(self.InputSerializer, request.query_params)
        _require_app(app_name)
        app = selectors.app_by_name(app_name)
        try:
            terms = search.parse_query(query["q"])
            results = search.search_events(app, query["q"], user_id=query["user_id"] or None, limit=query["limit"],
                                           offset=query["offset"], after=query.get("page_token") or None,
                                           ) if app else search.SearchResults([], 0, terms)
        except search.QueryError as exc:
            raise ValidationError({"q": [str(exc)]}) from exc
        except ValueError as exc:
            raise ValidationError({"page_token": ["Not a page token of this search; pass the last page's "
                                                  "nextPageToken as it came."]}) from exc
        body: dict[str, Any] = {"total": results.shown_total, "totalCapped": results.capped,
                                "hits": [_hit(h) for h in results.hits]}
        if results.next_token:
            body["nextPageToken"] = results.next_token
        return Response(self.OutputSerializer(body).data)


def _hit(hit: search.Hit) -> dict[str, Any]:
    return {
        "sessionId": hit.session.session_id, "userId": hit.session.user_id, "seq": hit.seq, "author": hit.author,
        "timestamp": hit.timestamp, "matched": list(hit.matched),
        "snippets": [{"kind": s.kind, "html": str(s.html), "matched": s.matched} for s in hit.snippets],
    }
