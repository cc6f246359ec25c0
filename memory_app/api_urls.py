"""ADK's artifact and memory routes under /api/, as `adk api_server` serves them.

Artifact names may contain "/", so the version routes come before the
catch-all name route (the same order ADK's server registers them in).
"""
from __future__ import annotations

from django.urls import URLPattern, URLResolver

from lazy_imports import lazy_path, views_in

apis = views_in("memory_app.apis")  # imported on first use: see lazy_imports.py

_SESSION = "apps/<str:app_name>/users/<str:user_id>/sessions/<str:session_id>/artifacts"

urlpatterns: list[URLPattern | URLResolver] = [
    lazy_path(
        f"{_SESSION}/<path:artifact_name>/versions/<str:version_id>/metadata",
        apis.ArtifactVersionMetadataApi.as_view(),
        name="artifact_api_version_metadata",
    ),
    lazy_path(
        f"{_SESSION}/<path:artifact_name>/versions/metadata",
        apis.ArtifactVersionMetadataListApi.as_view(),
        name="artifact_api_versions_metadata",
    ),
    lazy_path(
        f"{_SESSION}/<path:artifact_name>/versions/<str:version_id>",
        apis.ArtifactVersionDetailApi.as_view(),
        name="artifact_api_version",
    ),
    lazy_path(f"{_SESSION}/<path:artifact_name>/versions", apis.ArtifactVersionListApi.as_view(),
              name="artifact_api_versions"),
    lazy_path(f"{_SESSION}/<path:artifact_name>", apis.ArtifactDetailApi.as_view(), name="artifact_api_detail"),
    lazy_path(_SESSION, apis.ArtifactListApi.as_view(), name="artifact_api_list"),
    lazy_path("apps/<str:app_name>/users/<str:user_id>/memory", apis.MemoryUpdateApi.as_view(),
              name="memory_api_update"),
]
