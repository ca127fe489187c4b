"""WSGI entry point (granian in production, waitress in `manage.py serve`).

Loading it starts this process's liveness heartbeat (monitors.liveness), so the
evaluator can tell a job that did not ping from a CronRadar that could not
receive the ping; a process forked after loading it (gunicorn --preload)
starts its own.
"""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cronradar.settings")
_django = get_wsgi_application()

from cronradar.probes import Probes  # noqa: E402  (needs the settings loaded above)
from monitors import liveness  # noqa: E402
from monitors.views import PingRoute  # noqa: E402

# /healthz, /readyz and /metrics ahead of everything; pings skip Django's middleware
application = Probes(PingRoute(_django))

liveness.start_heartbeat(liveness.WEB)
os.register_at_fork(after_in_child=lambda: liveness.start_heartbeat(liveness.WEB))
