from __future__ import annotations

import pytest

from adkui.adk import DjangoArtifactService, DjangoMemoryService
from tests.conftest import close_worker_connections


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Artifact payloads go to a fresh folder per test."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def artifacts() -> DjangoArtifactService:
    yield DjangoArtifactService()
    close_worker_connections()


@pytest.fixture
def memory() -> DjangoMemoryService:
    yield DjangoMemoryService()
    close_worker_connections()
