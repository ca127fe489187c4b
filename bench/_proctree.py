"""CPU and memory of process trees from /proc, for the bench scripts (Linux only).

A tree is a root process and all its descendants, found anew at every sample
(through each process's parent in /proc/<pid>/stat), so the workers a server
starts later count too. CPU is utime + stime of every process in the tree plus
cutime + cstime (what its reaped children used): a before/after difference
keeps the CPU of a process that exited in between (a PostgreSQL backend) as
long as its parent is in the tree. Memory is each process's RSS and PSS
(/proc/<pid>/smaps_rollup, kB; PSS shares each shared page among the processes
that map it, so a tree's PSS sum is what it costs the machine).

CLI, for a shell script::

    _proctree.py run [--json FILE] [--interval SECS] NAME=PID ... -- CMD [ARG ...]

        Samples each tree (CPU, and every process's RSS and PSS: "idle"), runs
        CMD (stdin, stdout and stderr inherited), sampling memory every SECS
        meanwhile ("peak": each process's highest, and the highest of the
        tree's sum), then CPU again. SECS: default 1; a sample costs about
        0.6 ms of CPU a process (the kernel's walk for smaps_rollup), spent in
        this process, outside the trees measured. Writes the result as JSON
        to FILE, else prints the report (``show``) on stderr. Exits with CMD's
        status.

    _proctree.py show FILE [--per N] [--unit NAME] [--procs]

        The report of a ``run``'s JSON, a line per tree: CPU seconds, and with
        ``--per N`` (N operations: pings, deliveries) milliseconds per UNIT
        (default "ping"); RSS and PSS in MB, idle -> peak; a "total" line of
        the CPU when there are several trees. ``--procs``: a line per process
        too (pid, command line, RSS and PSS idle -> peak).

    _proctree.py snap NAME=PID ...

        One sample as JSON on stdout: {NAME: {"cpu_s": float, "procs":
        {pid: {"cmd": str, "rss_kb": int, "pss_kb": int}}}}.

NAME=PID names a tree: PID is a pid, or a file whose first line is one (a pid
file: PostgreSQL's ``postmaster.pid``, Redis's ``--pidfile``). A tree whose
root is gone is reported empty. Example (bench/ping_http.sh)::

    "$PY" bench/_proctree.py run --json "$S/tree.json" web="$WPID" \\
        postgres="$PG_DATA/postmaster.pid" redis="$S/redis.pid" -- wrk ...
    "$PY" bench/_proctree.py show "$S/tree.json" --per "$PINGS"

Run as a user that may read the processes' smaps_rollup (root, or their owner);
without that RSS comes from /proc/<pid>/statm and PSS is reported as 0.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

TICK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds incl. reaped children) of ``pid``, None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(rest[1]), sum(int(x) for x in rest[11:15]) / TICK


def _all() -> dict[int, tuple[int, float]]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            out[int(name)] = st
    return out


def root_pid(spec: str) -> int:
    """The pid of a NAME=PID argument's PID: a number, or a file whose first line is one.
    Raises ValueError when it is neither."""
    if spec.isdigit():
        return int(spec)
    with open(spec) as f:
        return int(f.readline().strip())


def tree(root: int, table: dict[int, tuple[int, float]] | None = None) -> list[int]:
    """``root`` and its descendants (pids), [] when ``root`` is gone."""
    table = _all() if table is None else table
    if root not in table:
        return []
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def cpu(root: int) -> float:
    """CPU seconds (user + system, incl. reaped children) of the tree at ``root``."""
    table = _all()
    return sum(table[p][1] for p in tree(root, table))


def memory(pid: int) -> tuple[int, int] | None:
    """(RSS kB, PSS kB) of ``pid`` from smaps_rollup; None if gone. Without access
    to smaps_rollup, RSS from statm and PSS 0."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            vals = {}
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Rss", "Pss"):
                    vals[key] = int(rest.split()[0])
            return vals.get("Rss", 0), vals.get("Pss", 0)
    except PermissionError:
        try:
            with open(f"/proc/{pid}/statm") as f:
                return int(f.read().split()[1]) * PAGE_KB, 0
        except OSError:
            return None
    except OSError:
        return None


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        if not cmd:
            with open(f"/proc/{pid}/comm") as f:
                cmd = f.read().strip()
    except OSError:
        return "?"
    return cmd[:70]


def snap(roots: dict[str, int]) -> dict:
    """One sample of each named tree: {"cpu_s": float, "procs": {pid: {"cmd", "rss_kb",
    "pss_kb"}}} by name."""
    table = _all()
    out = {}
    for name, root in roots.items():
        pids = tree(root, table)
        procs = {}
        for pid in pids:
            if (m := memory(pid)) is not None:
                procs[pid] = {"cmd": _cmd(pid), "rss_kb": m[0], "pss_kb": m[1]}
        out[name] = {"cpu_s": sum(table[p][1] for p in pids), "procs": procs}
    return out


def run(roots: dict[str, int], cmd: list[str], interval: float = 1.0) -> tuple[int, dict]:
    """Run ``cmd`` (inheriting stdio), sampling the trees before, during and after.

    Returns (cmd's exit status, result): per tree name {"cpu_s": CPU seconds during
    the run, "wall_s": the run's wall seconds, "procs": {pid: {"cmd", "rss_idle_kb",
    "pss_idle_kb", "rss_peak_kb", "pss_peak_kb"}} (idle None for a process started
    during the run), "rss_idle_kb", "pss_idle_kb" (the tree's sums before),
    "rss_peak_kb", "pss_peak_kb" (the highest sums sampled)}.
    """
    import time

    before = snap(roots)
    res: dict = {}
    for name, s in before.items():
        procs = {pid: {"cmd": p["cmd"], "rss_idle_kb": p["rss_kb"], "pss_idle_kb": p["pss_kb"],
                       "rss_peak_kb": p["rss_kb"], "pss_peak_kb": p["pss_kb"]}
                 for pid, p in s["procs"].items()}
        rss = sum(p["rss_kb"] for p in s["procs"].values())
        pss = sum(p["pss_kb"] for p in s["procs"].values())
        res[name] = {"procs": procs, "rss_idle_kb": rss, "pss_idle_kb": pss,
                     "rss_peak_kb": rss, "pss_peak_kb": pss}

    def sample(s: dict) -> None:
        for name, t in s.items():
            r = res[name]
            for pid, p in t["procs"].items():
                q = r["procs"].setdefault(pid, {"cmd": p["cmd"], "rss_idle_kb": None,
                                                "pss_idle_kb": None, "rss_peak_kb": 0,
                                                "pss_peak_kb": 0})
                q["rss_peak_kb"] = max(q["rss_peak_kb"], p["rss_kb"])
                q["pss_peak_kb"] = max(q["pss_peak_kb"], p["pss_kb"])
            r["rss_peak_kb"] = max(r["rss_peak_kb"], sum(p["rss_kb"] for p in t["procs"].values()))
            r["pss_peak_kb"] = max(r["pss_peak_kb"], sum(p["pss_kb"] for p in t["procs"].values()))

    done = threading.Event()

    def sampler() -> None:
        while not done.wait(interval):
            sample(snap(roots))

    t0 = time.monotonic()
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    try:
        status = subprocess.call(cmd)
    finally:
        done.set()
        th.join()
    wall = time.monotonic() - t0
    after = snap(roots)
    sample(after)
    for name in roots:
        res[name]["cpu_s"] = after[name]["cpu_s"] - before[name]["cpu_s"]
        res[name]["wall_s"] = wall
    return status, res


def report(res: dict, per: int | None = None, unit: str = "ping", procs: bool = False) -> str:
    """The text of :func:`run`'s result (see the module's ``show``)."""
    mb = lambda kb: "-" if kb is None else f"{kb / 1024:.0f}"  # noqa: E731
    lines = []

    def cpu_text(s: float) -> str:
        if per:
            return f"CPU {s * 1000 / per:6.3f} ms/{unit} ({s:6.2f} s)"
        return f"CPU {s:6.2f} s"

    for name, r in res.items():
        lines.append(f"  {name:<9} {cpu_text(r['cpu_s'])}  RSS {mb(r['rss_idle_kb'])} -> "
                     f"{mb(r['rss_peak_kb'])} MB, PSS {mb(r['pss_idle_kb'])} -> "
                     f"{mb(r['pss_peak_kb'])} MB ({len(r['procs'])} processes, idle -> peak)")
        if procs:
            for pid, p in sorted(r["procs"].items(), key=lambda kv: int(kv[0])):
                lines.append(f"      {pid:>7} {p['cmd']:<70.70} RSS {mb(p['rss_idle_kb'])} -> "
                             f"{mb(p['rss_peak_kb'])} MB, PSS {mb(p['pss_idle_kb'])} -> "
                             f"{mb(p['pss_peak_kb'])} MB")
    if len(res) > 1:
        lines.append(f"  {'total':<9} {cpu_text(sum(r['cpu_s'] for r in res.values()))}")
    return "\n".join(lines)


def _roots(args: list[str]) -> dict[str, int]:
    roots = {}
    for a in args:
        name, sep, spec = a.partition("=")
        if not sep:
            sys.exit(f"_proctree.py: expected NAME=PID, got {a!r}")
        try:
            roots[name] = root_pid(spec)
        except (OSError, ValueError):
            roots[name] = -1  # gone or unreadable: an empty tree
    return roots


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "show", "snap"):
        sys.exit(__doc__)
    cmd, args = argv[0], argv[1:]
    if cmd == "snap":
        print(json.dumps(snap(_roots(args))))
        return 0
    if cmd == "show":
        path, per, unit, procs = None, None, "ping", False
        while args:
            a = args.pop(0)
            if a == "--per":
                per = int(args.pop(0))
            elif a == "--unit":
                unit = args.pop(0)
            elif a == "--procs":
                procs = True
            else:
                path = a
        with open(path) as f:
            print(report(json.load(f), per or None, unit, procs))
        return 0
    out, interval = None, 1.0
    if "--" not in args:
        sys.exit("_proctree.py run: NAME=PID ... -- CMD")
    i = args.index("--")
    opts, command = args[:i], args[i + 1:]
    specs = []
    while opts:
        a = opts.pop(0)
        if a == "--json":
            out = opts.pop(0)
        elif a == "--interval":
            interval = float(opts.pop(0))
        else:
            specs.append(a)
    status, res = run(_roots(specs), command, interval)
    if out:
        with open(out, "w") as f:
            json.dump(res, f)
    else:
        print(report(res), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
