"""What adkui imports on first use rather than at start-up: the one place, and why.

Every process that runs Django's checks (`manage.py check`, `migrate`,
`db_worker`, most commands) imports the URLconf and every template tag library,
and the views and APIs import ADK's core and google-genai (some 700 pydantic
models; with ADK's CLI server, FastAPI and SQLAlchemy, about 3 CPU seconds),
which no check and no command needs. So:

- A URL module names its views instead of importing them::

      views = views_in("runtime_app.views")    # nothing imported yet
      urlpatterns = [lazy_path("", views.app_list, name="app_list"),
                     lazy_path("run", apis.RunApi.as_view(), name="run")]

  A request, `reverse()` (Django keys its table of names by view too),
  `manage.py spectacular`, or anything else that reads a pattern's `callback`
  imports its module then, once, and from there on gets the real view, as a
  plain `path()` would have given it (async views, `csrf_exempt`, DRF's `cls`
  and the rest unchanged). The server imports every view before its first
  request (`load_views()`, in adkui/asgi.py), so that request stays fast.
  What Django's URL checks lose: they no longer see a view module that fails to
  import (the first request, and the tests, do); and their check that a class
  was passed without `.as_view()` cannot fail, since classes are always made
  into views with it.
- A module imported at start-up reads a module built on ADK through
  `on_first_use`, when it first needs it: eval_app's template tags (ADK's eval
  metrics: Django imports every tag library wherever it checks or renders a
  template), the home page's import jobs (ADK's SQL session services and
  SQLAlchemy, for an import the user starts).
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.checks import CheckMessage
from django.urls import URLPattern, URLResolver, path
from django.urls.resolvers import RoutePattern
from django.views import View

ViewFunction = Callable[..., Any]


@dataclass(frozen=True)
class ViewRef:
    """A view, or a class-based view's class, named by its module and attribute."""

    module: str
    name: str
    initkwargs: dict[str, Any] = field(default_factory=dict)

    def as_view(self, **initkwargs: Any) -> ViewRef:
        """The class's `as_view(**initkwargs)`, when the view is made."""
        return replace(self, initkwargs=initkwargs)

    def target(self) -> Any:
        """The named object itself (imports its module)."""
        return getattr(importlib.import_module(self.module), self.name)

    def load(self) -> ViewFunction:
        target = self.target()
        if isinstance(target, type) and issubclass(target, View):
            return target.as_view(**self.initkwargs)
        if self.initkwargs:
            raise TypeError(f"{self.module}.{self.name} is not a class-based view: it takes no as_view() arguments.")
        return target


@dataclass(frozen=True)
class MadeBy:
    """The view `make(*parts)` returns, the parts named by `views_in` (see `made_by`)."""

    make: Callable[..., ViewFunction]
    parts: tuple[ViewRef, ...]

    def load(self) -> ViewFunction:
        return self.make(*(part.target() for part in self.parts))


def made_by(make: Callable[..., ViewFunction], *parts: ViewRef) -> MadeBy:
    """`make(*parts)` on first use, each part imported then: a view built of several."""
    return MadeBy(make, parts)


# What `lazy_path` takes: how to make the view (`load()`).
LazyView = ViewRef | MadeBy


class ViewsIn:
    """A module's views by name, imported with the module on first use (see `views_in`)."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __getattr__(self, name: str) -> ViewRef:
        if name.startswith("__"):  # copy, pickle and the like probe dunders: not views
            raise AttributeError(name)
        return ViewRef(self.module, name)


def views_in(module: str) -> ViewsIn:
    """`views_in("app.views").name`: a reference to `app.views.name`, without importing it."""
    return ViewsIn(module)


class LazyURLPattern(URLPattern):
    """A `URLPattern` whose callback is made by its `LazyView` on first read."""

    def __init__(self, pattern: RoutePattern, view: LazyView, default_args: dict[str, Any] | None, name: str | None):
        self.pattern = pattern
        self.view = view
        self.default_args = default_args or {}
        self.name = name

    @functools.cached_property
    def callback(self) -> ViewFunction:  # type: ignore[override]  # Django's is a plain attribute
        return self.view.load()

    @property
    def loaded(self) -> bool:
        return "callback" in self.__dict__

    def _check_callback(self) -> list[CheckMessage]:
        # Django's check would read the callback (importing the view) to see whether it is a bare
        # View class; a LazyView never gives one. Once loaded, the check runs as usual.
        return super()._check_callback() if self.loaded else []


def lazy_path(route: str, view: LazyView | ViewFunction, kwargs: dict[str, Any] | None = None,
              name: str | None = None) -> URLPattern:
    """`django.urls.path` for a view named by `views_in` (a plain view is taken as `path` takes it)."""
    if not isinstance(view, LazyView):
        return path(route, view, kwargs, name)
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs argument must be a dict, but got {kwargs.__class__.__name__}.")
    return LazyURLPattern(RoutePattern(route, name=name, is_endpoint=True), view, kwargs, name)


def _patterns(patterns: list[URLPattern | URLResolver]) -> Iterator[URLPattern]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern.url_patterns)
        else:
            yield pattern


def load_views(resolver: URLResolver) -> int:
    """Import every view of the URLconf now (the server, before its first request); how many were lazy."""
    lazy = [p for p in _patterns(resolver.url_patterns) if isinstance(p, LazyURLPattern)]
    for pattern in lazy:
        pattern.callback  # noqa: B018 (a cached property: reading it imports)
    return len(lazy)


class OnFirstUse:
    """A module, imported when one of its attributes is first read (see `on_first_use`)."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(self.module), name)


def on_first_use(module: str) -> Any:
    """`module`, imported when one of its names is first read (see this module's docstring for where)."""
    return OnFirstUse(module)
