"""WSGI entry point (gunicorn in production, waitress in `manage.py serve`)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cronradar.settings")
application = get_wsgi_application()
