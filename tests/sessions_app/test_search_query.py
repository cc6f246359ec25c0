"""Search queries are parsed into words of letters and digits, and snippets escape what is stored (no database)."""
from __future__ import annotations

import pytest

from sessions_app.search import (
    MAX_QUERY_CHARS, MAX_TERMS, QueryError, Term, _fields, _fts5_match, _snippet, parse_query,
)


def test_words_phrases_and_prefixes():
    assert parse_query('Refund "order  ID" ord* "next step"*') == (
        Term(("refund",)), Term(("order", "id")), Term(("ord",), prefix=True), Term(("next", "step"), prefix=True),
    )


def test_punctuation_splits_words_as_the_index_does():
    assert parse_query("order_id A-17 /tmp/foo.txt") == (
        Term(("order", "id")), Term(("a", "17")), Term(("tmp", "foo", "txt")),
    )


def test_and_between_words_is_the_default_and_alone_a_word():
    assert parse_query("refund AND policy") == (Term(("refund",)), Term(("policy",)))
    assert parse_query("AND") == (Term(("and",)),)
    assert parse_query('"AND" refund') == (Term(("and",)), Term(("refund",)))


@pytest.mark.parametrize("hostile", [
    '"', '"refund', 'refund"', "OR", "NOT x", "-x", "x -y", "NEAR(a b)", "a:b", "body:x", "^x", "x*y", "(", ")",
    "'", "''", "\\", "&|!<->", "a & b | !c", "x:*", "{x}", "\x00", "a\x00b", "\ud800", "a\ud800b", "\x1b[31m",
    "SELECT * FROM x; --", "%", "%s", "_", "😀 x",
])
def test_hostile_input_becomes_quoted_words_only(hostile):
    try:
        terms = parse_query(hostile)
    except QueryError:
        return  # nothing to search for: the view says so
    match = _fts5_match(terms)
    for term in terms:
        assert all(word.isalnum() for word in term.words), term
    # Every term is one FTS5 string: quotes come only in pairs around words.
    assert match.count('"') == 2 * len(terms)


@pytest.mark.parametrize(("query", "message"), [
    ("", "no word"), ("   ", "no word"), ('""', "no word"), ("- * ( )", "no word"),
    ("x" * (MAX_QUERY_CHARS + 1), "at most 500"),
    (" ".join(f"w{i}" for i in range(MAX_TERMS + 1)), f"at most {MAX_TERMS}"),
])
def test_what_cannot_be_searched_is_a_query_error(query, message):
    with pytest.raises(QueryError, match=message):
        parse_query(query)


def test_snippet_escapes_stored_markup_and_marks_only_the_terms():
    stored = 'Ignore <script>alert("x")</script> and <mark>this</mark> but refund <b>now</b> & "then"'
    snippet = _snippet("text", stored, parse_query("refund"))
    assert snippet.matched
    assert str(snippet.html) == (
        "Ignore &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; and &lt;mark&gt;this&lt;/mark&gt; "
        "but <mark>refund</mark> &lt;b&gt;now&lt;/b&gt; &amp; &quot;then&quot;"
    )


def test_snippet_marks_phrases_and_prefixes_and_centres_on_the_first_hit():
    text = "filler " * 80 + "the refund policy says refunding is fine" + " tail" * 80
    snippet = _snippet("text", text, parse_query('"refund policy" refund*'))
    html = str(snippet.html)
    assert html.startswith("…") and html.endswith("…")
    assert "<mark>refund policy</mark> says <mark>refunding</mark>" in html
    assert len(html) < 400


def test_a_field_without_the_terms_is_not_matched():
    snippet = _snippet("state", "topic = \"cats\"", parse_query("refund"))
    assert not snippet.matched and "<mark>" not in snippet.html


def test_fields_are_what_the_index_holds_by_kind():
    data = {
        "content": {"parts": [
            {"text": "Looking it up"},
            {"function_call": {"name": "lookup_order", "args": {"order_id": "A-17"}}},
            {"function_response": {"name": "lookup_order", "response": {"status": "shipped"}}},
        ]},
        "error_message": "quota exceeded",
        "actions": {"state_delta": {"user:tier": "gold"}},
    }
    assert _fields(data) == {
        "text": "Looking it up\nquota exceeded",
        "tool": 'lookup_order({"order_id": "A-17"})\nlookup_order → {"status": "shipped"}',
        "state": 'user:tier = "gold"',
    }
    assert _fields({"content": 7, "actions": {"state_delta": []}}) == {"text": "", "tool": "", "state": ""}
