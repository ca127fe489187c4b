"""The Django bootstrap of the bench scripts: ``import _django`` (a script's own
folder, ``bench/``, is first on ``sys.path``), then ``_django.setup(...)`` before
anything imports a model, then the project's imports (``# noqa: E402``)::

    import _django

    _django.setup("scratch", CRONRADAR_LIVENESS_INTERVAL="0")
    from monitors.models import Monitor  # noqa: E402
"""
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the project: manage.py, cronradar/


def setup(database: str = "embedded", *, migrate: bool = True,
          **env: str | None) -> Path | None:
    """Set the environment, ``django.setup()``, and migrate unless ``migrate=False``.

    Puts ROOT first on ``sys.path`` and defaults DJANGO_SETTINGS_MODULE to
    ``cronradar.settings``. ``database`` picks DATABASE_URL:

    - ``"embedded"``: removed, so SQLite in a new temporary CRONRADAR_DATA_DIR
      (the embedded default's settings: WAL, ``BEGIN IMMEDIATE``);
    - ``"scratch"``: BENCH_DATABASE_URL when set (a scratch PostgreSQL: migrated
      and written to), else as ``"embedded"``; a new temporary CRONRADAR_DATA_DIR
      either way;
    - ``"bench"``: BENCH_DATABASE_URL, required (exits with a message without it);
    - ``"env"``: DATABASE_URL and CRONRADAR_DATA_DIR as the caller's environment
      has them.

    ``env``: more variables (name=value), set over the caller's environment before
    Django reads its settings; None removes one (``REDIS_URL=None``).

    Returns the temporary data directory (``"embedded"``, ``"scratch"``), else None.
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    data = None
    if database == "bench" and not os.environ.get("BENCH_DATABASE_URL"):
        sys.exit("set BENCH_DATABASE_URL=postgres://... (a scratch database)")
    if database in ("embedded", "scratch", "bench"):
        os.environ.pop("DATABASE_URL", None)
        if database != "embedded" and os.environ.get("BENCH_DATABASE_URL"):
            os.environ["DATABASE_URL"] = os.environ["BENCH_DATABASE_URL"]
        if database != "bench":
            data = Path(tempfile.mkdtemp())
            os.environ["CRONRADAR_DATA_DIR"] = str(data)
    elif database != "env":
        raise ValueError(f"database: embedded, scratch, bench or env, not {database!r}")
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cronradar.settings")

    import django
    from django.core.management import call_command

    django.setup()
    if migrate:
        call_command("migrate", verbosity=0)
    return data
