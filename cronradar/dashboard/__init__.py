"""The web dashboard: server-rendered pages (``templates/dashboard/``) over the same
domain functions and serializers as the API, with a few lines of plain JavaScript
for live refresh and copy buttons; every page works without JavaScript."""
