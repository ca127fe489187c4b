"""``POST /api/v1/import/crontab/`` and ``POST /api/v1/import/k8s/``: monitors as
code over the API, the same imports as ``manage.py importcrontab`` / ``importk8s``
(the work is :mod:`monitors.imports`; these views are thin).

The file is the body, either as text (``Content-Type: text/plain``, or any
``text/*``; for manifests also ``application/yaml``), options then being query
parameters, or as JSON ``{"text": "...", ...options}``. Options: ``project`` (id;
for a person in several projects, default the key's project), and for a crontab
``system`` (the file has a user field: /etc/crontab, /etc/cron.d), ``wrap``
(``curl`` or ``exec``) and ``timezone`` (the host's zone, default UTC).
``?dry_run=1`` answers the diff (what would be created, updated with which
changes, left unchanged, and what was reported) and changes nothing; without it
the import is applied and answered with the same diff, plus for a crontab the
file with each job wrapped to ping its monitor (``crontab``). Writing, dry run
included, needs the ``member`` role; a read-only key gets a 403.
"""
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import exceptions, parsers, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import tenancy
from accounts.auth import JSONParser
from accounts.models import Membership
from core.api import RejectUnknown, flag
from monitors import schedule
from monitors.imports import apply, crontab, k8s, spec

HELP = {
    "project": "the project's id (default: the key's project, or a person's only project)",
    "system": "a system crontab (/etc/crontab, /etc/cron.d): the 6th field is the user",
    "wrap": "how jobs ping: curl lines (default) or cronradar exec",
    "timezone": "the host's time zone, for jobs with no CRON_TZ= or TZ= line before them "
                "(default UTC)",
}


class TextParser(parsers.BaseParser):
    """A text body (any ``text/*`` type) as a str; one that is not UTF-8 is a 400."""

    media_type = "text/*"

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return stream.read().decode("utf-8")
        except UnicodeDecodeError:
            raise exceptions.ParseError("the body must be UTF-8 text") from None


class YamlParser(TextParser):
    """``application/yaml`` as text."""

    media_type = "application/yaml"


class XYamlParser(TextParser):
    """``application/x-yaml`` as text."""

    media_type = "application/x-yaml"


@extend_schema_field(OpenApiTypes.INT)
class ProjectId(tenancy.ProjectField):
    """:class:`accounts.tenancy.ProjectField` outside a model serializer (an integer
    in the schema)."""


class ImportInput(RejectUnknown, serializers.Serializer):
    """A manifest import: the file and the project."""

    text = serializers.CharField(trim_whitespace=False, allow_blank=True,
                                 help_text="the file")
    project = ProjectId(help_text=HELP["project"])


class CrontabInput(ImportInput):
    """A crontab import: the file, the project and how to read and wrap it."""

    system = serializers.BooleanField(default=False, help_text=HELP["system"])
    wrap = serializers.ChoiceField(["curl", "exec"], default="curl", help_text=HELP["wrap"])
    timezone = serializers.CharField(default="UTC", max_length=64, help_text=HELP["timezone"])

    def validate_timezone(self, value: str) -> str:
        try:
            schedule.validate_timezone(value)
        except schedule.ScheduleError as e:
            raise serializers.ValidationError(str(e)) from None
        return value


class ImportAnswer(serializers.Serializer):
    """The diff an import answers (see :meth:`monitors.imports.Outcome.as_dict`)."""

    project = serializers.IntegerField()
    dry_run = serializers.BooleanField()
    created = serializers.ListField(child=serializers.DictField(),
                                    help_text="{slug, where, id (not in a dry run), monitor}")
    updated = serializers.ListField(child=serializers.DictField(),
                                    help_text="{slug, where, id, changes: {field: {old, new}}}")
    unchanged = serializers.ListField(child=serializers.DictField(),
                                      help_text="{slug, where, id}")
    reported = serializers.ListField(child=serializers.DictField(),
                                     help_text="{where, message}: left out, and why")
    notes = serializers.ListField(child=serializers.DictField(),
                                  help_text="{where, message}: what was assumed, warnings "
                                            "('warning: ...') and values kept")


class CrontabAnswer(ImportAnswer):
    """The diff, and (not in a dry run) the crontab with each job wrapped."""

    crontab = serializers.CharField(required=False)


QUERY = [  # the options of a text body, as query parameters
    OpenApiParameter("project", int, description=HELP["project"]),
    OpenApiParameter("system", bool, description=HELP["system"]),
    OpenApiParameter("wrap", str, enum=["curl", "exec"], description=HELP["wrap"]),
    OpenApiParameter("timezone", str, description=HELP["timezone"])]


def _schema(input_class, answer_class, summary: str):
    params = [OpenApiParameter("dry_run", bool, description="only answer the diff; change "
                               "nothing")]
    params += [p for p in QUERY if p.name in input_class().fields]
    return extend_schema(
        summary=summary, parameters=params,
        request={"application/json": input_class, "text/plain": OpenApiTypes.STR},
        responses={200: answer_class, 409: OpenApiResponse(
            OpenApiTypes.OBJECT, description="a monitor of the import was created or deleted "
            "meanwhile: nothing was changed; run it again")})


class _Import(APIView):
    """An import: read the input, find the project, parse, apply (or compare)."""

    write_role = Membership.Role.MEMBER
    parser_classes = [JSONParser, TextParser]
    input_class = ImportInput

    def post(self, request):
        options = self._options(request)
        project = tenancy.target_project(request, options.pop("project", None),
                                         Membership.Role.MEMBER)
        dry_run = bool(flag(request, "dry_run"))
        try:
            parsed = self.parse(options)
            outcome = apply.apply(project, parsed.specs, dry_run, timezone.now())
        except spec.Conflict as e:
            return Response({"detail": str(e)}, status=409)
        except spec.ImportFailed as e:
            raise serializers.ValidationError({"text": [str(e)]}) from None
        return Response({"project": project.pk, **outcome.as_dict(parsed),
                         **self.extra(parsed, outcome, options)})

    def _options(self, request) -> dict:
        """The validated input: a text body with the query's options, or a JSON object
        (whose fields win over the query's)."""
        query = {k: v for k, v in request.query_params.items()
                 if k in self.input_class().fields and k != "text"}
        if isinstance(request.data, str):
            data = {**query, "text": request.data}
        elif isinstance(request.data, dict):
            data = {**query, **request.data}
        else:
            raise serializers.ValidationError({"detail": ['the body must be the file (text/plain) '
                                                          'or a JSON object {"text": "..."}']})
        given = self.input_class(data=data, context={"request": request})
        given.is_valid(raise_exception=True)
        return dict(given.validated_data)

    def parse(self, options: dict) -> spec.Parsed:
        """The file of the validated ``options``, read; raises ImportFailed."""
        raise NotImplementedError

    def extra(self, parsed: spec.Parsed, outcome: apply.Outcome, options: dict) -> dict:
        """What the answer has besides the diff."""
        return {}


class ImportCrontab(_Import):
    """``POST /api/v1/import/crontab/``: one monitor per job of a crontab."""

    input_class = CrontabInput

    @_schema(CrontabInput, CrontabAnswer, "Import a crontab: one monitor per job")
    def post(self, request):
        """Create or update one monitor per job line (by slug); answer the diff and,
        unless ``dry_run``, the crontab with each job wrapped to ping its monitor."""
        return super().post(request)

    def parse(self, options: dict) -> spec.Parsed:
        return crontab.parse_crontab(options["text"], options["system"], options["timezone"],
                                     options["wrap"])

    def extra(self, parsed, outcome, options) -> dict:
        if outcome.dry_run:
            return {}
        urls = {slug: m.ping_url for slug, m in outcome.monitors.items()}
        return {"crontab": crontab.wrap_crontab(parsed, urls, options["wrap"])}


class ImportK8s(_Import):
    """``POST /api/v1/import/k8s/``: one monitor per Kubernetes CronJob."""

    parser_classes = [JSONParser, TextParser, YamlParser, XYamlParser]

    @_schema(ImportInput, ImportAnswer, "Import Kubernetes CronJob manifests")
    def post(self, request):
        """Create or update one monitor per ``batch/v1`` CronJob of the manifests
        (multi-document YAML; slug ``metadata.name``); answer the diff."""
        return super().post(request)

    def parse(self, options: dict) -> spec.Parsed:
        return k8s.parse_k8s(options["text"])
