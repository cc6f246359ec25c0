from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .models import App


@require_GET
def app_list(request: HttpRequest) -> HttpResponse:
    return render(request, "sessions_app/app_list.html", {"apps": App.objects.all()})
