"""The Jinja2 environment of the timeline's rows and the state panel (sessions_app/jinja2/.../partials/).

A session page renders a row for each event it shows, the live push one for each event
appended, a reconnecting page's catch-up up to hundreds: Django's template engine spent
about 0.5 ms of CPU a row on its variable lookups, Jinja2's compiled templates a third of
that; the state panel has a row a key, and renders with them. The rest of the pages stay
Django templates; they include these with `{% jinja %}`.
"""
from __future__ import annotations

from typing import Any

from django.utils.text import slugify
from jinja2 import ChainableUndefined, Environment

from .templatetags import adkui


def environment(**options: Any) -> Environment:
    # A missing attribute anywhere in a chain renders as nothing, as in Django's templates:
    # a stored event without some field must not break a page.
    options["undefined"] = ChainableUndefined
    env = Environment(**options)
    env.filters.update(
        markdown=adkui.markdown, preview=adkui.preview, pretty=adkui.pretty, unix_time=adkui.unix_time,
        short_time=adkui.short_time, slugify=slugify, breakable=adkui.breakable,
    )
    env.globals.update(url=adkui.cached_url, fold_at=adkui.FOLD_AT)
    return env
