"""bench/_proctree.py: a process tree's CPU and memory from /proc, and its CLI."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

from tests.live import ROOT

spec = importlib.util.spec_from_file_location("_proctree", ROOT / "bench" / "_proctree.py")
proctree = importlib.util.module_from_spec(spec)
spec.loader.exec_module(proctree)

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"


def test_a_tree_holds_the_grandchildren_and_counts_the_cpu_of_reaped_ones():
    # a shell (the root) whose child sleeps and whose other child burns 0.3 s and exits
    root = subprocess.Popen(["sh", "-c", f'sleep 30 & "{sys.executable}" -c "$0"; wait', BURN])
    try:
        time.sleep(0.1)
        kids = [p for p in proctree.tree(root.pid) if p != root.pid]
        assert len(kids) == 2
        assert proctree.memory(root.pid)[0] > 0  # RSS kB
        deadline = time.monotonic() + 20  # the burner ends; its CPU goes to the shell's cutime
        while len(proctree.tree(root.pid)) > 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(proctree.tree(root.pid)) == 2
        # the shell and the sleeper have used next to nothing: the burner's 0.3 s
        # is counted, reaped (a difference from a reading taken while it ran failed
        # on a fast machine, where it had burnt 0.1 s of it within the first 0.1 s)
        assert proctree.cpu(root.pid) >= 0.25
    finally:
        for pid in proctree.tree(root.pid):
            os.kill(pid, signal.SIGKILL)
        root.wait()


def test_run_and_show_report_cpu_per_operation_and_memory(tmp_path):
    out = tmp_path / "tree.json"
    sleeper = subprocess.Popen(["sleep", "30"])
    pidfile = tmp_path / "sleep.pid"
    pidfile.write_text(f"{sleeper.pid}\n")
    try:
        status = subprocess.run(
            [sys.executable, ROOT / "bench" / "_proctree.py", "run", "--json", out,
             f"sleeper={pidfile}", "gone=999999999", "--", "sh", "-c", "sleep 0.3; exit 3"],
        ).returncode
    finally:
        sleeper.kill()
        sleeper.wait()
    assert status == 3
    res = json.loads(out.read_text())
    assert res["sleeper"]["cpu_s"] < 0.1 and 0.3 <= res["sleeper"]["wall_s"] < 5
    assert list(res["sleeper"]["procs"]) == [str(sleeper.pid)]
    sleeping = res["sleeper"]
    assert sleeping["rss_idle_kb"] > 0 and sleeping["rss_peak_kb"] >= sleeping["rss_idle_kb"]
    assert res["gone"]["procs"] == {} and res["gone"]["cpu_s"] == 0
    text = subprocess.run([sys.executable, ROOT / "bench" / "_proctree.py", "show", out,
                           "--per", "1000", "--procs"], capture_output=True, text=True,
                          check=True).stdout
    assert "ms/ping" in text and f"{sleeper.pid} sleep 30" in text and "  total " in text
