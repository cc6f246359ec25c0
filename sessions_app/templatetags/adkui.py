"""Template filters for showing agent data safely."""
from __future__ import annotations

import datetime
import functools
import json
import re
import threading
from typing import Any

import markdown as md
import nh3
from django import template
from django.template import engines
from django.urls import get_resolver, get_script_prefix, get_urlconf, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

FOLD_AT = 400
# Texts up to this long keep their HTML in each process's cache (`_markdown_html`):
# a stored event's text never changes, and a session page shows the same ones again.
MARKDOWN_CACHED_CHARS = 4_000  # and at most 1 024 of them: a few MB per process at worst
# Building a Markdown converter costs what converting a text does; one is reusable
# (reset) but converts one text at a time. Kept per process, not per thread: under
# ASGI each request runs in a thread of its own.
_idle_converters: list[md.Markdown] = []
_converters_lock = threading.Lock()


@register.filter
def markdown(text: str) -> SafeString:
    """Markdown to HTML, then sanitised: agent text may contain any HTML,
    and none of it may run (no scripts, handlers or javascript: URLs)."""
    text = text or ""
    html = _markdown_html(text) if len(text) <= MARKDOWN_CACHED_CHARS else _markdown_uncached(text)
    return mark_safe(html)  # noqa: S308 (sanitised in _markdown_uncached)


@functools.lru_cache(maxsize=1024)
def _markdown_html(text: str) -> str:
    return _markdown_uncached(text)


def _markdown_uncached(text: str) -> str:
    with _converters_lock:
        converter = _idle_converters.pop() if _idle_converters else None
    if converter is None:
        converter = md.Markdown(extensions=["fenced_code", "tables", "sane_lists"])
    try:
        html = converter.reset().convert(text)
    finally:
        with _converters_lock:
            _idle_converters.append(converter)
    return nh3.clean(html, link_rel="noopener noreferrer nofollow")


@register.simple_tag
def jinja(name: str, **context: Any) -> SafeString:
    """`{% include %}` for a template of the Jinja2 engine (the timeline's rows, the state panel: sessions_app/jinja2/):
    rendered with `context` alone, and HTML already (that engine escapes what it outputs)."""
    return mark_safe(engines["jinja2"].get_template(name).render(context))  # noqa: S308


@register.simple_tag
def cached_url(viewname: str, *args: Any) -> str:
    """`{% url %}` for the links every page and timeline row repeats (the same few views, the
    session's pk): each one reversed once per process, not each time (12 us a link against 46
    for `{% url %}`, some 30 links a session page)."""
    return _reversed(get_resolver(get_urlconf()), get_script_prefix(), viewname, args)


@functools.lru_cache(maxsize=4096)
def _reversed(resolver: Any, prefix: str, viewname: str, args: tuple[Any, ...]) -> str:
    # The resolver (a new one after the URLconf changes) and the script prefix
    # are part of the key: the same name and args reverse as `{% url %}` would.
    return reverse(viewname, args=args)


_BREAK_AFTER = re.compile(r"(?<=[_:])")


@register.filter
def breakable(name: Any) -> SafeString:
    """A name (snake_case, a scoped key) that may wrap after each "_" and ":", never
    inside a word: a long name takes a narrow column's width instead of widening it."""
    return mark_safe("<wbr>".join(escape(part) for part in _BREAK_AFTER.split(str(name))))  # each part escaped


@register.filter
def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def compact(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, default=str)


@register.filter
def is_long(value: Any) -> bool:
    return len(pretty(value)) > FOLD_AT


@register.filter
def preview(value: Any, size: int = 120) -> str:
    text = compact(value)
    return text if len(text) <= size else text[: size - 1] + "…"


def utc_datetime(value: Any) -> datetime.datetime | None:
    """A stored float timestamp as an aware datetime; None when it is no time a
    datetime can hold (a value stored before it was checked must not break a page)."""
    try:
        return datetime.datetime.fromtimestamp(float(value), tz=datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


@register.filter
def unix_time(value: float | None) -> str:
    if value is None:
        return ""
    when = utc_datetime(value)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC" if when else f"{value!r} (not a valid time)"


@register.filter
def short_time(value: float | None) -> str:
    if value is None:
        return ""
    when = utc_datetime(value)
    return when.strftime("%H:%M:%S.%f")[:-3] if when else "?"


@register.filter
def scope_prefix(scope: str) -> str:
    return {"app": "app:", "user": "user:"}.get(scope, "")
