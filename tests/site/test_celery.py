"""cronradar.celery: worker and beat keep Django's LOGGING (one format, the ids)."""
import os
import subprocess
import sys
import textwrap

from tests.live import ROOT

SCRIPT = textwrap.dedent("""
    import logging
    import django
    django.setup()
    from cronradar.celery import app
    root = logging.getLogger()
    before = list(root.handlers)
    app.log.setup(loglevel="DEBUG")  # what `celery worker` and `celery beat` call
    task_logger = logging.getLogger("celery.task")
    own = [h for h in task_logger.handlers if not isinstance(h, logging.NullHandler)]
    print(root.handlers == before, type(root.handlers[0].formatter).__name__,
          logging.getLevelName(root.level), own, task_logger.propagate)
""")


def test_celery_leaves_the_root_logger_and_its_format_alone():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cronradar.settings",
           "CRONRADAR_LOG_FORMAT": "json", "LOG_LEVEL": "INFO"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["True", "JsonFormatter", "INFO", "[]", "True"], done.stderr
