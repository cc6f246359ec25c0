"""What an import of an ADK store reports (`adk_import`), apart from the reading itself: the
home page's import jobs (`local_imports`) keep these without importing ADK's SQL session
services (SQLAlchemy), which only a running import needs."""
from __future__ import annotations

from dataclasses import dataclass, field


class ImportSourceError(Exception):
    """SOURCE does not exist, cannot be opened, or is not an ADK store."""


@dataclass
class ImportSummary:
    sessions_new: int = 0
    sessions_existing: int = 0
    events_new: int = 0
    events_existing: int = 0
    artifacts_new: int = 0
    artifacts_existing: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (session id, why)
    conflicts: list[tuple[str, list[str]]] = field(default_factory=list)  # (session id, keys)

    def add(self, other: ImportSummary) -> None:
        for name in ("sessions_new", "sessions_existing", "events_new", "events_existing", "artifacts_new",
                     "artifacts_existing"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def lines(self) -> list[str]:
        out = [
            f"sessions: {self.sessions_new} new, {self.sessions_existing} already there",
            f"events: {self.events_new} new, {self.events_existing} already there",
            f"artifact versions: {self.artifacts_new} new, {self.artifacts_existing} already there",
        ]
        out += [f"kept the source's value of {', '.join(keys)} in session {sid} (not explained by its events)"
                for sid, keys in self.conflicts]
        out += [f"skipped session {sid}: {why}" for sid, why in self.failed]
        return out
