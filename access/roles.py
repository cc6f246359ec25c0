"""adkui's roles: three Django groups, and the one permission each request needs.

| group    | permissions                    | may                                                  |
|----------|--------------------------------|------------------------------------------------------|
| viewer   | access.view                    | see every page, API read and live stream             |
| editor   | + access.edit                  | chat, runs, new sessions and chats, state, events,   |
|          |                                | artifact and memory writes, eval sets, cases, runs   |
| admin    | + access.delete, user accounts | delete sessions, artifacts, memories, eval sets and  |
|          |                                | cases; manage users and tokens in Django's admin     |

Superusers pass every check (Django's `has_perm`). Pages, the API and
websockets all ask `permission_needed`: safe methods need `view`, DELETE needs
`delete`, other writes need `edit`. A view whose POST does something else says
so with a marker below (HTML forms can only POST, so a page's delete is a POST).
"""
from __future__ import annotations

from typing import Any, TypeVar

VIEW = "access.view"
EDIT = "access.edit"
DELETE = "access.delete"

VIEWER, EDITOR, ADMIN = "viewer", "editor", "admin"
ROLE_OF = {VIEW: VIEWER, EDIT: EDITOR, DELETE: ADMIN}  # the least role holding each permission

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})

_RULE = "access_rule"
_DELETES, _READS, _LOGIN_ONLY = "deletes", "reads", "login-only"

V = TypeVar("V")


def _mark(view: V, rule: str) -> V:
    setattr(view, _RULE, rule)
    return view


def deletes(view: V) -> V:
    """A view (function or APIView class) whose POST deletes: it needs `delete`."""
    return _mark(view, _DELETES)


def reads(view: V) -> V:
    """A view whose POST only reads (a search too long for a query string): `view` is enough."""
    return _mark(view, _READS)


def login_only(view: V) -> V:
    """A view any logged-in user may use, with or without a role (logging out)."""
    return _mark(view, _LOGIN_ONLY)


def permission_needed(method: str, view: Any) -> str | None:
    """The permission a request with `method` to `view` needs; None: being logged in is enough."""
    rule = getattr(view, _RULE, None)
    if rule == _LOGIN_ONLY:
        return None
    if method in SAFE_METHODS or rule == _READS:
        return VIEW
    if method == "DELETE" or rule == _DELETES:
        return DELETE
    return EDIT


def refusal_message(permission: str) -> str:
    role = ROLE_OF[permission]
    return f"Your role does not allow this: it needs the {permission!r} permission (the {role!r} group or above)."
