"""Benchmark: from a granian worker's death to answering again, and a crash loop.

Starts granian as docs/production.md and docker/systemd/cronradar-web.service run
it (2 workers, 2 threads each, ``--respawn-failed-workers``, the real application
on SQLite in a new data directory) under a supervisor loop that restarts it
``RESTART_SEC`` (1 s, the unit's ``RestartSec``) after it exits, as systemd's
``Restart=always`` does. ``GET /healthz`` is polled on a new connection every
``POLL`` seconds (timeout 0.5 s). Three measures, R rounds each (default 5):

- ``survivor``: one worker is killed with SIGKILL while the other runs: the
  seconds to the first 200 after the kill, and how many polls failed in the 3 s
  after it (the other worker answers meanwhile; granian respawns the dead one).
- ``replacement``: the other worker is stopped (SIGSTOP) and then one is killed:
  the seconds to the first 200, which only the respawned worker can give (what a
  lone worker's death costs). The stopped worker is resumed after.
- ``crash loop``: a worker is killed, then its replacement is killed again within
  granian's 5.5 s crash-loop window: granian exits for good (printed: seconds from
  the second kill to its exit), and the supervisor starts it again (seconds from
  the second kill to the first 200).

Run: ``.venv/bin/python bench/respawn.py [R]`` from the project's root. Prints one
line per round and the range of each measure.
"""
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
R = int(sys.argv[1]) if len(sys.argv) > 1 else 5
RESTART_SEC = 1.0
POLL = 0.005
CRASH_LOOP_WINDOW = 5.5  # granian's: a respawned worker dying within it ends granian


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthz(port: int) -> bool:
    """One GET /healthz on a new connection: True on 200."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
        c.request("GET", "/healthz")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


def first_200(port: int, since: float, timeout: float = 60) -> tuple[float, int]:
    """Poll until a 200: (seconds from ``since`` to it, polls that failed)."""
    failed = 0
    while time.monotonic() - since < timeout:
        if healthz(port):
            return time.monotonic() - since, failed
        failed += 1
        time.sleep(POLL)
    raise SystemExit(f"no 200 within {timeout} s")


def state(pid: int) -> str:
    """The process state letter of ``pid`` (R, S, T stopped, Z dead...); "" when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return ""


def kill_and_wait(pid: int) -> float:
    """SIGKILL ``pid``; returns the time of the kill once the process is dead (a
    zombie or gone), so a 200 after it cannot be the dead worker's."""
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    while state(pid) not in ("Z", "X", ""):
        time.sleep(0.0005)
    return killed


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


class Supervised:
    """granian under a loop restarting it RESTART_SEC after each exit."""

    def __init__(self, port: int, env: dict):
        self.command = [str(ROOT / ".venv/bin/granian"), "--interface", "wsgi",
                        "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
                        "--blocking-threads", "2", "--respawn-failed-workers",
                        "--workers-kill-timeout", "10", "--log-level", "error",
                        "cronradar.wsgi:application"]
        self.env, self.proc, self.exits, self.stopping = env, None, [], False
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        self.started.wait()

    def _loop(self):
        while not self.stopping:
            self.proc = subprocess.Popen(self.command, cwd=ROOT, env=self.env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started.set()
            self.proc.wait()
            self.exits.append(time.monotonic())
            time.sleep(RESTART_SEC)

    def workers(self, n: int = 2, timeout: float = 30, dead=()) -> list[int]:
        """The worker pids once there are ``n`` of them, none of ``dead``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = children(self.proc.pid)
            if len(pids) == n and not set(pids) & set(dead):
                return pids
            time.sleep(0.01)
        raise SystemExit(f"granian has {children(self.proc.pid)} workers, not {n}")

    def stop(self):
        self.stopping = True
        self.proc.send_signal(signal.SIGTERM)
        self.thread.join(30)


def settle(server: Supervised, port: int) -> list[int]:
    """Two workers, both answering, past granian's crash-loop window."""
    first_200(port, time.monotonic())
    time.sleep(CRASH_LOOP_WINDOW + 0.5)
    return server.workers()


def main():
    data = tempfile.mkdtemp(prefix="bench-respawn-")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(CRONRADAR_DATA_DIR=data, DJANGO_SETTINGS_MODULE="cronradar.settings",
               PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env,
                   check=True)
    port = free_port()
    t0 = time.monotonic()
    server = Supervised(port, env)
    cold, _ = first_200(port, t0)
    print(f"cold start to the first 200: {cold:.2f} s")
    results = {"survivor": [], "replacement": [], "crash loop exit": [], "crash loop": []}
    try:
        for rnd in range(1, R + 1):
            a, b = settle(server, port)
            killed = kill_and_wait(a)
            took, _ = first_200(port, killed)
            failed = 0
            while time.monotonic() - killed < 3:
                failed += not healthz(port)
                time.sleep(POLL)
            results["survivor"].append(took)

            a, b = settle(server, port)
            os.kill(b, signal.SIGSTOP)
            while state(b) != "T":
                time.sleep(0.0005)
            killed = kill_and_wait(a)
            replaced, _ = first_200(port, killed)
            os.kill(b, signal.SIGCONT)
            results["replacement"].append(replaced)

            a, b = settle(server, port)
            before = server.proc.pid
            kill_and_wait(a)
            replacement = next(p for p in server.workers(dead=[a]) if p != b)
            first_200(port, time.monotonic())
            exits = len(server.exits)
            killed = kill_and_wait(replacement)   # within 5.5 s of its respawn
            while len(server.exits) == exits:
                time.sleep(0.005)
            exited = server.exits[-1] - killed
            back, _ = first_200(port, killed)
            assert server.proc.pid != before, "granian did not exit: no crash loop?"
            results["crash loop exit"].append(exited)
            results["crash loop"].append(back)
            print(f"round {rnd}: survivor first 200 {took * 1000:.1f} ms, {failed} failed "
                  f"polls in 3 s; replacement first 200 {replaced:.2f} s; crash loop: "
                  f"granian exited {exited:.2f} s after the second kill, first 200 "
                  f"{back:.2f} s after it (load average {os.getloadavg()[0]:.1f})")
    finally:
        server.stop()
    for name, values in results.items():
        print(f"{name}: {min(values):.3f}-{max(values):.3f} s over {len(values)} rounds")


if __name__ == "__main__":
    main()
