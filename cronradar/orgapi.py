"""``/api/v1/organisation/``: exporting and deleting an organisation (owners,
signed in: an API key belongs to one project and can do neither). The work is
:mod:`cronradar.orgdata` and :mod:`accounts.deletion`; these views only find the
organisation and answer.

- ``GET /api/v1/organisation/export/`` (``?organisation=<id>`` when the caller is
  in several): the archive, streamed, as ``cronradar-<org>-<date>.json``.
- ``DELETE /api/v1/organisation/`` with ``{"confirm": "<its name>"}`` (and
  ``organisation`` when the caller is in several): 202, hidden at once, purged
  once the resolves of its open incidents are sent.
"""
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import deletion, tenancy
from accounts.models import Membership, Organisation
from core.api import RejectUnknown, object_id
from cronradar import orgdata

OWNER = Membership.Role.OWNER
KEYS_CANNOT = "this needs a person with the owner role; API keys cannot do it"


def _organisation(request, given: int | None, named: str = "") -> Organisation:
    """The caller's organisation: ``given`` (an id), else the one named ``named``,
    else their only one. 404 for one they cannot see, 400 when it is ambiguous,
    403 for a key or someone who is not an owner there."""
    who = tenancy.caller(request)
    if who.key is not None:
        raise exceptions.PermissionDenied(KEYS_CANNOT)
    mine = who.organisations()
    if given is not None:
        org = mine.filter(pk=given).first()
        if org is None:
            raise exceptions.NotFound()
    else:
        found = list(mine.filter(name=named)[:1]) if named else []
        found = found or list(mine.order_by("pk")[:2])
        if len(found) != 1:
            raise serializers.ValidationError(
                {"organisation": ["required: you are in several organisations; give the id "
                                  "of one"]})
        org = found[0]
    if who.org_role(org.pk) != OWNER:
        raise exceptions.PermissionDenied("this needs the owner role in the organisation")
    return org


class Export(APIView):
    """``GET /api/v1/organisation/export/``: the organisation as one JSON archive
    (:func:`cronradar.orgdata.export`), an attachment; recorded in the audit log."""

    http_method_names = ["get", "head", "options"]

    @extend_schema(parameters=[OpenApiParameter(
        "organisation", int, description="the organisation's id (needed when you are in "
                                         "several)")],
        responses={(200, "application/json"): OpenApiTypes.OBJECT})
    def get(self, request):
        return orgdata.download(_organisation(request, object_id(request, "organisation")),
                                request)


class DeleteRequest(RejectUnknown, serializers.Serializer):
    """``confirm``: the organisation's name, typed; ``organisation``: its id
    (needed when you are in several organisations, unless ``confirm`` names one)."""

    confirm = serializers.CharField(max_length=100, allow_blank=True, trim_whitespace=False)
    organisation = serializers.IntegerField(required=False, min_value=1)


class DeleteAnswer(serializers.Serializer):
    """The answer to a deletion (202)."""

    organisation = serializers.IntegerField()
    deleted_at = serializers.DateTimeField()
    detail = serializers.CharField()


class Delete(APIView):
    """``DELETE /api/v1/organisation/``: delete the organisation
    (:func:`accounts.deletion.delete_organisation`): 202; everything of it is
    hidden at once, its open incidents are resolved on their channels and its rows
    purged once those resolves are delivered or given up."""

    http_method_names = ["delete", "options"]
    write_role = OWNER  # tenancy.Access: a key, or a person owner nowhere, is a 403 first

    @extend_schema(request=DeleteRequest, responses={202: DeleteAnswer})
    def delete(self, request):
        body = DeleteRequest(data=request.data)
        body.is_valid(raise_exception=True)
        confirm = body.validated_data["confirm"]
        org = _organisation(request, body.validated_data.get("organisation"), confirm)
        try:
            deletion.delete_organisation(org, request.user, confirm, timezone.now())
        except deletion.Refused as e:
            if e.reason == "confirm":
                raise serializers.ValidationError({"confirm": [e.message]}) from None
            raise exceptions.PermissionDenied(e.message) from None
        return Response({"organisation": org.pk, "deleted_at": org.deleted_at,
                         "detail": DELETED.format(name=org.name)},
                        status=status.HTTP_202_ACCEPTED)


DELETED = ("{name} is deleted: it is hidden now, and purged once the resolves of its open "
           "incidents are sent")
