"""DRF's OPTIONS answer (``DEFAULT_METADATA_CLASS``). Its own module: DRF imports
it while defining ``APIView``, so it must not import views."""
from rest_framework import metadata


class Metadata(metadata.SimpleMetadata):
    """OPTIONS answers name, description and the media types; the schema describes
    the fields (DRF's field listing would build serializers for routes that need
    an object)."""

    def determine_metadata(self, request, view):
        return {"name": view.get_view_name(), "description": view.get_view_description(),
                "renders": [r.media_type for r in view.renderer_classes],
                "parses": [p.media_type for p in view.parser_classes]}
