"""What the chat panel shows for a session: the agent's state, this process's
runs of it, and the run options the user picked.

The options (stream tokens, max LLM calls, keep running when I leave) are the
user's: picked once, they stay picked. Every send remembers them in the
browser's Django session, and every render of the panel starts from them:
after a resume, a stop, the end of a run, a reload of the page. The session
page view builds its context without a request-aware form, so the page's form
comes from `remembered_chat_form`, a context processor (see settings).
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, QueryDict
from django.utils.functional import SimpleLazyObject

from sessions_app import selectors
from sessions_app.models import Session
from sessions_app.sandbox import real_app_name

from . import agents, runs
from .forms import OPTION_FIELDS, ChatForm

OPTIONS_KEY = "adkui_chat_options"


def chat_context(session: Session, form: ChatForm | None = None) -> dict[str, Any]:
    """The panel's context; without `form`, the page's remembered form (the context processor's) is used."""
    key = session.key
    agent_name = real_app_name(key.app_name)  # a sandbox's session chats with its agent
    loaded = agents.find(agent_name)
    context = {
        "session": session,
        "agent_error": None if loaded is None or loaded.ok else loaded.error,
        "has_agent": loaded is not None and loaded.ok,
        "running": bool(runs.running_invocations(key)),
        "unfinished": selectors.resumable_invocation(session),
        "orphan_timeout": settings.ADKUI_ORPHAN_RUN_TIMEOUT,
    }
    return context if form is None else context | {"chat_form": form}


def _known(options: Any) -> dict[str, Any]:
    # Only fields the form still has: a session may outlive a form change.
    return {k: options[k] for k in OPTION_FIELDS if k in options} if isinstance(options, dict) else {}


def remembered_options(request: HttpRequest) -> dict[str, Any]:
    return _known(request.session.get(OPTIONS_KEY))


async def aremember_options(request: HttpRequest, options: dict[str, Any]) -> None:
    await request.session.aset(OPTIONS_KEY, _known(options))


def remember_options(request: HttpRequest, options: dict[str, Any]) -> None:
    request.session[OPTIONS_KEY] = _known(options)


def posted_options(data: QueryDict) -> dict[str, Any]:
    """The valid options a panel request carried along (the stop button's hx-include); {} when none."""
    if "max_llm_calls" not in data:
        return {}  # not sent at all, so not "unticked" either
    form = ChatForm(data)
    form.is_valid()  # a message is not needed here: only the options' own fields count
    return _known(form.cleaned_data)


def remembered_form(request: HttpRequest) -> ChatForm:
    return ChatForm(initial=remembered_options(request))


def remembered_chat_form(request: HttpRequest) -> dict[str, Any]:
    """Context processor: `chat_form`, an empty chat form with the user's options.

    Lazy, so pages without a chat panel never read the Django session for it.
    A view's own `chat_form` (a form with errors) takes precedence.
    """
    return {"chat_form": SimpleLazyObject(lambda: remembered_form(request))}
