"""Monitors as code: a crontab (:mod:`~monitors.imports.crontab`) or Kubernetes
CronJob manifests (:mod:`~monitors.imports.k8s`) read into monitor specs
(:mod:`~monitors.imports.spec`), and those specs applied to a project or compared
with it (:mod:`~monitors.imports.apply`). Used by ``manage.py importcrontab`` /
``importk8s`` and ``POST /api/v1/import/crontab/`` / ``/import/k8s/``
(:mod:`~monitors.imports.api`).
"""
