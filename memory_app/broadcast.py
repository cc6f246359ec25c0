"""Live push for artifacts, through sessions_app's channel-layer module.

An artifact's versions change while a chat runs (an agent's `save_artifact`,
a rewind's tombstones) or from another tab. Every open page of a session that
can read the artifact gets one small frame, rendered once: it names the
artifact and its newest version, and the page's script reloads its artifacts
panel (keeping the artifact and version its reader has open) unless the panel
already shows that version. The panel itself is not pushed: which artifact and
version it shows differs from one viewer to the next.
"""
from __future__ import annotations

from django.template.loader import render_to_string

from sessions_app import broadcast as session_broadcast
from sessions_app import selectors as session_selectors
from sessions_app.relay import relayed

from .models import USER_PREFIX
from .naming import ArtifactKey


@relayed
def artifacts_changed(*, app_name: str, user_id: str, session_id: str, filename: str, version: int | None) -> None:
    """The artifact (its `ArtifactKey`'s fields) has a new `version` (None: it was deleted)."""
    key = ArtifactKey(app_name, user_id, session_id, filename)
    groups = [session_broadcast.session_group(pk) for pk in _session_pks(key)]
    groups = [g for g in groups if session_broadcast.listened(g)]
    if not groups:
        return
    name = USER_PREFIX + key.filename if key.is_user_scoped else key.filename
    html = render_to_string("memory_app/artifacts_panel.html#artifacts_live", {"name": name, "version": version})
    for group in groups:
        session_broadcast.send(group, {"type": "artifacts.changed", "html": html})


def _session_pks(key: ArtifactKey) -> list[int]:
    # A user-scoped artifact is read by every session of its user.
    session_id = None if key.is_user_scoped else key.session_id
    return session_selectors.session_pks(app_name=key.app_name, user_id=key.user_id, session_id=session_id)
