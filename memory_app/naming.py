"""Where an artifact lives: its scope and name, validated before anything is read or written.

ADK's contract: a filename starting with `user:` is user-scoped (shared by all
of the user's sessions), and so is any artifact addressed without a session.
Both spellings, `user:x` and `x` with no session, name the same artifact, and
it is listed as `user:x` so the listed name loads verbatim from anywhere.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from google.adk.artifacts import artifact_util
from google.adk.errors.input_validation_error import InputValidationError

from .models import USER_PREFIX

MAX_FILENAME_LENGTH = 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Part of `validate_filename`'s rule as a schema's pattern: not blank, no control character.
# (Paths out of scope, `..` or a leading slash, are refused too, but said in words.)
FILENAME_PATTERN = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"


@dataclass(frozen=True)
class ArtifactKey:
    app_name: str
    user_id: str
    session_id: str  # "" for the user scope
    filename: str  # without the user: prefix

    @property
    def is_user_scoped(self) -> bool:
        return self.session_id == ""

    def as_filter(self) -> dict[str, str]:
        return {
            "app_name": self.app_name,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "filename": self.filename,
        }


def artifact_key(*, app_name: str, user_id: str, filename: str, session_id: Optional[str]) -> ArtifactKey:
    """The validated key of an artifact; InputValidationError says what is wrong."""
    artifact_util.validate_path_segment(app_name, "app_name")
    artifact_util.validate_path_segment(user_id, "user_id")
    if not isinstance(filename, str):
        raise InputValidationError("Artifact filename must be a string.")
    user_scoped = filename.startswith(USER_PREFIX) or session_id is None
    if session_id is not None:
        session_id = session_id.strip()  # as ADK's session services strip it: " s1 " is session "s1"
    name = filename.removeprefix(USER_PREFIX)
    validate_filename(name, shown=filename)
    if user_scoped:
        return ArtifactKey(app_name, user_id, "", name)
    artifact_util.validate_path_segment(session_id, "session_id")
    return ArtifactKey(app_name, user_id, session_id, name)


def validate_filename(name: str, *, shown: str | None = None) -> None:
    """Refuse names that read as paths outside their scope.

    Payloads are stored under generated names, so no artifact name can reach
    the filesystem; these rules exist so that a name means the same thing here
    as in ADK's file-backed service, which lays names out as paths.
    """
    shown = name if shown is None else shown
    if not name.strip():
        raise InputValidationError("Artifact filename must not be empty.")
    if len(name) > MAX_FILENAME_LENGTH:
        raise InputValidationError(f"Artifact filename is longer than {MAX_FILENAME_LENGTH} characters.")
    if _CONTROL.search(name):
        raise InputValidationError(f"Artifact filename {shown!r} must not contain control characters.")
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise InputValidationError(
            f"Artifact filename {shown!r} must be relative: no leading slash or drive letter."
        )
    if ".." in name.replace("\\", "/").split("/"):
        raise InputValidationError(f"Artifact filename {shown!r} must not contain '..' (path traversal).")
