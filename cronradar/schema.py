"""How the OpenAPI schema is generated (``DEFAULT_SCHEMA_CLASS``): the error answers
every operation can give, and extensions describing CronRadar's own auth and
fields. Its own module, free of views: DRF resolves it while views are defined."""
from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Describes :class:`accounts.auth.ApiKeyAuthentication` in the OpenAPI schema."""

    target_class = "accounts.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "Project API key (also accepted as `X-Api-Key`)."}


ERROR_SCHEMA = {"type": "object", "additionalProperties": True,
                "description": '`{"detail": "message"}`, or a list of messages per field '
                               '(`{"grace": ["must be at least 1 second …"]}`)'}
ERRORS = {"400": "bad input: a message per field", "401": "no valid API key or session",
          "403": "a role (or a read-only key) acting above its rights",
          "404": "not found (also another tenant's object)", "429": "over the rate limit; "
          "see Retry-After"}


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema generator, with the JSON error answers every
    endpoint can give (``ERRORS``) documented on each operation, and the bounds
    of a list of objects (``TierSerializer(many=True, min_length=1,
    max_length=20)``) as ``minItems``/``maxItems``, which drf-spectacular leaves
    out."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, serializers.ListSerializer) and schema.get("type") == "array":
            if field.min_length is not None:
                schema["minItems"] = field.min_length
            if field.max_length is not None:
                schema["maxItems"] = field.max_length
        return schema

    def _get_response_bodies(self, direction="response"):
        bodies = super()._get_response_bodies(direction)
        for code, text in ERRORS.items():
            bodies.setdefault(code, {"content": {"application/json": {"schema": ERROR_SCHEMA}},
                                     "description": text})
        return bodies


class AlertingValueScheme(OpenApiSerializerFieldExtension):
    """Describes ``alerts.api.AlertingValue`` as the field it wraps."""

    target_class = "alerts.api.AlertingValue"

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target.inner, direction)
        if self.target.allow_null:
            schema["nullable"] = True
        if self.target.read_only:
            schema["readOnly"] = True
        return schema
