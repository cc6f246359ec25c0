"""The OpenAPI schema of ADK's pydantic models: one component per model, and genai's open enums as open strings.

drf-spectacular names each pydantic model's sub-models by class name alone, so two
models of one name (google-genai's `Interval` and ADK eval's) became one component
and one of them was described wrongly. Here the first model to claim a name keeps it
(google-genai's own always do, being ADK's base vocabulary); any other model of that
name is named after its module too (`EvalMetricsInterval`).
"""
from __future__ import annotations

import enum
from typing import Any

import google.genai.types
from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.plumbing import ResolvedComponent
from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import CoreModeRef, DefsRef, GenerateJsonSchema, JsonSchemaValue, model_json_schema
from pydantic.alias_generators import to_pascal
from pydantic_core import core_schema
from rest_framework.permissions import AllowAny

from adk_compat import OpenEnum

_OPEN = "x-open-enum"
# Component name -> the class (module.qualname) that holds it, for the life of the process.
_OWNERS: dict[str, str] = {}


def component_name(module: str, name: str) -> str:
    """The component name of class `name` of `module`: its own name unless another class holds it."""
    qualified = f"{module}.{name}"
    if module != google.genai.types.__name__ and isinstance(getattr(google.genai.types, name, None), type):
        owner = f"{google.genai.types.__name__}.{name}"
    else:
        owner = _OWNERS.setdefault(name, qualified)
    if owner == qualified:
        return name
    return to_pascal(module.rsplit(".", 1)[-1]) + name


class _AdkJsonSchema(GenerateJsonSchema):
    def get_defs_ref(self, core_mode_ref: CoreModeRef) -> DefsRef:
        defs_ref = super().get_defs_ref(core_mode_ref)
        core_ref = core_mode_ref[0].rsplit(":", 1)[0]
        if "[" not in core_ref and "." in core_ref:  # a plain class, not a generic's parameters
            module, name = core_ref.rsplit(".", 1)
            self._prioritized_defsref_choices[defs_ref].insert(0, DefsRef(component_name(module, name)))
        return defs_ref

    def enum_schema(self, schema: core_schema.EnumSchema) -> JsonSchemaValue:
        json_schema = super().enum_schema(schema)
        if issubclass(schema["cls"], OpenEnum):
            return _open_enum(json_schema, schema["cls"])
        # The members' own names, for generators: ADK's EvalStatus is 1, 2, 3, 4, which they name VALUE_1...
        json_schema["x-enum-varnames"] = [member.name for member in schema["members"]]
        return json_schema


def _open_enum(json_schema: JsonSchemaValue, cls: type[enum.Enum]) -> JsonSchemaValue:
    """What google-genai does with a value it does not know: keeps it (and reads a known one in any case)."""
    json_schema["examples"] = json_schema.pop("enum", [member.value for member in cls])
    json_schema["type"] = "string"
    json_schema[_OPEN] = True  # pydantic sets the class's docstring as description after this
    return json_schema


def _describe_open_enum(json_schema: JsonSchemaValue) -> None:
    if json_schema.pop(_OPEN, False):
        note = (f"An open enum: {', '.join(json_schema['examples'])} are known; google-genai, and so ADK, keeps "
                "any other text as it is (and reads a known value in any case), so a client must accept any string.")
        json_schema["description"] = f"{json_schema.get('description') or ''}\n\n{note}".lstrip()


class AdkPydanticExtension(PydanticExtension):
    """drf-spectacular's pydantic support, with names that never collide and open enums said open."""

    priority = 1

    def get_name(self, auto_schema: Any, direction: str) -> str:
        super().get_name(auto_schema, direction)  # its collision-warning override
        target: type[BaseModel] = self.target
        return component_name(target.__module__, target.__qualname__)

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema = model_json_schema(
            self.target, ref_template="#/components/schemas/{model}", mode="serialization", schema_generator=_AdkJsonSchema,
        )
        _title(schema, component_name(self.target.__module__, self.target.__qualname__))
        for name, sub_schema in schema.pop("$defs", {}).items():
            _describe_open_enum(sub_schema)
            _title(sub_schema, name)
            component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=sub_schema)
            auto_schema.registry.register_on_missing(component)
        return schema


def _title(json_schema: JsonSchemaValue, name: str) -> None:
    """A model's title is its component name: generators name classes by title (openapi-python-client does), and
    pydantic's, the bare class name, gave `EvalMetricsInterval` the title `Interval` of google-genai's."""
    if "title" in json_schema:
        json_schema["title"] = name


class AdkModelFieldExtension(OpenApiSerializerFieldExtension):
    """A serializer field holding an ADK model is that model's component, not "any object": a generated client
    then builds a `Content` for a run's `newMessage`, `Event`s for a new session's `events`."""

    target_class = "sessions_app.apis.base.AdkModelField"

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        return auto_schema.resolve_serializer(self.target.model, direction).ref


# ---- errors: one shape, and every status an operation can answer -------------------------


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error of the API. ADK's own: `{\"detail\": message}` (a list of pydantic's problems on "
                   "ADK's 422s). Invalid input: `{field: [messages]}`, each key the field at fault as a dotted path "
                   "into the body (`content.parts.0.text`), `non_field_errors` for the body as a whole.",
    # Arrays say what they hold: a client generator cannot type an array of nothing in particular.
    "properties": {"detail": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]}},
    "additionalProperties": {"anyOf": [{"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "object"}]}},
                                       {"type": "object"}]},
    "minProperties": 1,
}


class ApiError(BaseModel):
    """Schema only: the body of every error answer (see ERROR_SCHEMA)."""

    model_config = ConfigDict(json_schema_extra=lambda schema, cls: (schema.clear(), schema.update(ERROR_SCHEMA)))


# What each status means wherever it applies; operations name their own with `errors(...)`.
ERROR_STATUSES = {
    400: "Invalid input, named by field (body, query string or path: no NUL, ids within 255 characters, ...).",
    401: "No valid login or API token (when logins are on).",
    403: "The role of the login or token does not allow this.",
    404: "Not found: the app, user's session, or whatever the path names.",
    409: "Conflict: it exists already, or the session changed since it was read.",
    413: "Over a size limit; the message names the setting.",
    415: "The body is not JSON.",
    422: "As ADK's server answers: a path or query value of the wrong type.",
    429: "Too many requests (ADKUI_THROTTLE_ANON / ADKUI_THROTTLE_USER).",
}


# ADK's server answers `null` where it has nothing to say (deletes, memory updates): a JSON body, so documented as one.
NULL = OpenApiResponse({"type": "null"}, description="`null`, as ADK answers.")


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """`extend_schema(responses=...)` entries for the statuses an operation answers besides the ones every
    operation of its kind does (which `ApiAutoSchema` adds)."""
    return {status: OpenApiResponse(ApiError, description=ERROR_STATUSES[status]) for status in statuses}


class ApiAutoSchema(AutoSchema):
    """drf-spectacular's schema, with the errors each operation can answer, in the one `ApiError` shape."""

    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        documented = {int(code): body.get("description") for code, body in responses.items() if code >= "400"}
        for status in self._error_statuses():
            documented.setdefault(status, ERROR_STATUSES[status])
        for status, description in documented.items():  # a view's own error entries take the shape too
            error = OpenApiResponse(ApiError, description=description or ERROR_STATUSES.get(status, ""))
            responses[str(status)] = self._get_response_for_code(error, str(status), ["application/json"])
        return dict(sorted(responses.items()))

    def _error_statuses(self) -> list[int]:
        statuses = [400]  # any path or query string with NUL or a lone surrogate, at least
        if "{" in self.path:
            statuses.append(404)
        if self.method in ("POST", "PUT", "PATCH"):
            statuses.append(415)
        if not any(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            statuses += [401, 403]
        if self.view.get_throttles():
            statuses.append(429)
        return statuses
