"""Helpers the import tests share (tests/monitors/imports/ and the import commands
in tests/monitors/test_commands.py)."""
from tests.conftest import S

GRACE = 300 * S
CURL = "curl -fsS -m 10 --retry 5 -o /dev/null"
RID = "RID=$(cat /proc/sys/kernel/random/uuid)"


def cron(schedule, tz="UTC", semantics="debian"):
    return {"kind": "cron", "schedule": schedule, "timezone": tz, "cron_semantics": semantics,
            "period": None}


def curl_wrap(url, command, comment=""):
    return (f'{RID}; {CURL} "{url}/start?rid=$RID"; ( {command} ); rc=$?; '
            f'{CURL} "{url}/$rc?rid=$RID"' + (f" {comment}" if comment else ""))
