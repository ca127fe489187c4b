"""CronRadar's Python SDK: report scheduled jobs to a CronRadar service.

Standard library only, Python 3.8+. ``from cronradar_sdk import monitor`` gives the
decorator and context manager (:mod:`cronradar_sdk.runs`); settings are in
:mod:`cronradar_sdk.config`, the ping primitive in :mod:`cronradar_sdk.pings`. See
the SDK page of CronRadar's docs (docs/sdk.md).
"""
__version__ = "0.1.0"
__all__ = ["Run", "monitor", "__version__"]


def __getattr__(name: str):
    """``monitor`` and ``Run``, imported on first use: ``cronradar exec`` (a cron
    line's start-up time) does not need them or asyncio."""
    if name in ("monitor", "Run"):
        from cronradar_sdk import runs

        return getattr(runs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
