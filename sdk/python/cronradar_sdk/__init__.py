"""CronRadar's Python SDK: report scheduled jobs to a CronRadar service.

Standard library only, Python 3.8+. ``from cronradar_sdk import monitor`` gives the
decorator and context manager (:mod:`cronradar_sdk.runs`); settings are in
:mod:`cronradar_sdk.config`, the ping primitive in :mod:`cronradar_sdk.pings`. See
the SDK page of CronRadar's docs (docs/sdk.md).
"""
__version__ = "0.1.0"

from cronradar_sdk.runs import Run, monitor  # noqa: E402 (after __version__, which it uses)

__all__ = ["Run", "monitor", "__version__"]
