from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.test import Client
from google.adk.events.event import Event
from google.genai import types
from rest_framework.authtoken.models import Token

from adkui.adk import DjangoArtifactService, DjangoMemoryService
from eval_app import services as eval_services
from eval_app.evalset_files import parse_eval_set_file, stored_eval_metrics
from eval_app.models import EvalCase, EvalRun
from memory_app.models import MemoryEvent
from sessions_app.models import Session as SessionRow

APP, USER, SID = "trip_planner", "u", "s"
PASSWORD = "correct horse battery staple"
DEMO_EVALSET = Path(__file__).resolve().parents[2] / "eval_app" / "demo" / "trip_planner.evalset.json"
# What a request could change: every row of the apps that hold ADK data.
DATA_APPS = ("sessions_app", "memory_app", "eval_app", "inspector_app", "runtime_app")


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_throttles() -> Iterator[None]:
    # Throttle counts live in the (process-wide) default cache.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def production(settings: Any) -> Any:
    settings.ADKUI_LOCAL_DEV = False
    return settings


@pytest.fixture
def make_user(roles: None) -> Callable[[str | None], User]:
    """A user in the group `role` ("superuser" for one, None for no role)."""

    def make(role: str | None) -> User:
        name = role or "norole"
        if role == "superuser":
            return User.objects.create_superuser(name, password=PASSWORD)
        user = User.objects.create_user(name, password=PASSWORD)
        if role:
            user.groups.add(Group.objects.get(name=role))
        return user

    return make


@pytest.fixture
def client_as(make_user: Callable[[str | None], User]) -> Callable[[str | None], Client]:
    """A client logged in (pages) and holding an API token (`client.token`), or anonymous for "anonymous"."""

    def make(role: str | None) -> Client:
        client = Client()
        client.token = None  # type: ignore[attr-defined]
        if role != "anonymous":
            user = make_user(role)
            client.force_login(user)
            client.token = Token.objects.create(user=user).key  # type: ignore[attr-defined]
        return client

    return make


@dataclass
class World:
    """One of everything a request can change, with the ids its routes take."""

    pk: int
    app_pk: int
    invocation_id: str
    set_pk: int
    case_pk: int
    queued_run_pk: int
    stopped_run_pk: int
    memory_pk: int
    app: str = APP
    user: str = USER
    sid: str = SID


def said(author: str, text: str, invocation_id: str = "inv-1") -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, invocation_id=invocation_id, content=types.Content(role=role, parts=[types.Part(text=text)]))


@pytest.fixture
def world(service: Any, roles: None) -> World:
    session = service.create_session_sync(app_name=APP, user_id=USER, session_id=SID, state={"k": 1})
    service.append_event_sync(session, said("user", "Plan a trip"))
    service.append_event_sync(session, said("trip_planner", "Where to?"))
    DjangoArtifactService().save_artifact_sync(app_name=APP, user_id=USER, session_id=SID, filename="report.txt",
                                               artifact=types.Part(text="draft"))
    DjangoMemoryService().add_events_to_memory_sync(app_name=APP, user_id=USER, session_id="old",
                                                    events=[said("user", "My sister lives in Porto")])
    parsed = parse_eval_set_file(filename=DEMO_EVALSET.name, content=DEMO_EVALSET.read_bytes())
    eval_set = eval_services.eval_set_import(parsed=parsed, app_name=APP)
    case = EvalCase.objects.filter(eval_set=eval_set).order_by("pk").first()

    def run() -> EvalRun:
        return eval_services.eval_run_create(eval_set=eval_set, app_name=APP, metrics=stored_eval_metrics(eval_set.criteria),
                                             eval_ids=[case.eval_id], start=False)

    stopped = run()
    EvalRun.objects.filter(pk=stopped.pk).update(status=EvalRun.STOPPED)
    row = SessionRow.objects.get(session_id=SID)
    return World(
        pk=row.pk, app_pk=row.app_id, invocation_id="inv-1", set_pk=eval_set.pk, case_pk=case.pk,
        queued_run_pk=run().pk, stopped_run_pk=stopped.pk,
        memory_pk=MemoryEvent.objects.get().pk,
    )


def snapshot() -> dict[str, list[tuple]]:
    """Every row of every model that holds ADK data, for "nothing changed"."""
    return {
        model._meta.label: list(model.objects.order_by("pk").values_list())
        for label in DATA_APPS
        for model in django_apps.get_app_config(label).get_models()
    }
