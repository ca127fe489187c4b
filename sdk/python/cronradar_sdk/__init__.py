"""CronRadar's Python SDK: report scheduled jobs to a CronRadar service.

Standard library only, Python 3.8+. See the SDK page of CronRadar's docs
(docs/sdk.md).
"""
__version__ = "0.1.0"
