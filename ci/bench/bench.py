"""Side-by-side benchmark driver: kinit vs ansible-playbook (default, pipelining) vs pyinfra.

For every cell (workload, N hosts, M tasks) the runners run interleaved (A B C A B C ...),
each under `/usr/bin/time -v`; the driver records wall time, controller CPU (user+sys),
peak RSS, sshd logins during the run and the exit code, then prints medians, ratios against
kinit, per-task-per-host time and per-task overhead, as Markdown. See ci/bench/run.sh.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import Lab  # noqa: E402
from workloads import write_all  # noqa: E402

RUNNERS = ["kinit", "ansible", "ansible-pipe", "pyinfra"]


def command(runner, args, d, pb, ini, pyinv, dep, n):
    if runner == "kinit":
        return [args.kinit, "playbook", pb, "-i", ini, "--forks", str(max(n, 1))], {}
    venv = os.path.join(args.venv, "bin")
    env = {
        "ANSIBLE_CONFIG": os.path.join(args.work, "ansible.cfg"),
        "PATH": venv + ":" + os.environ["PATH"],
    }
    # A fresh ControlPath directory per run: every run pays its own connections, as kinit's
    # and pyinfra's do (masters left by an earlier run would otherwise be reused).
    cp = os.path.join(args.work, "cp", str(time.monotonic_ns()))
    os.makedirs(cp)
    env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = cp
    env["ANSIBLE_SSH_ARGS"] = "-C -o ControlMaster=auto -o ControlPersist=10s"
    if runner == "ansible":
        return [os.path.join(venv, "ansible-playbook"), "-i", ini, "-f", str(n), pb], env
    if runner == "ansible-pipe":
        env["ANSIBLE_PIPELINING"] = "True"
        return [os.path.join(venv, "ansible-playbook"), "-i", ini, "-f", str(n), pb], env
    if runner == "pyinfra":
        return [os.path.join(venv, "pyinfra"), "-y", "--parallel", str(n), pyinv, dep], {}
    raise ValueError(runner)


def parse_time(path):
    text = open(path).read()

    def num(label):
        m = re.search(re.escape(label) + r":\s*([0-9.]+)", text)
        return float(m.group(1)) if m else float("nan")

    return num("User time (seconds)") + num("System time (seconds)"), num("Maximum resident set size (kbytes)")


def run_once(runner, args, lab, cell, n):
    d, pb, ini, pyinv, dep = cell
    shutil.rmtree("/tmp/kbench", ignore_errors=True)
    os.makedirs("/tmp/kbench", exist_ok=True)
    os.chmod("/tmp/kbench", 0o1777)
    argv, extra = command(runner, args, d, pb, ini, pyinv, dep, n)
    for _ in range(1200):  # a release build may still be finishing (ansible runs first)
        if os.path.exists(argv[0]):
            break
        time.sleep(1)
    env = dict(os.environ, **extra)
    tfile = os.path.join(args.work, "time.txt")
    off = lab.log_offset()
    t0 = time.monotonic()
    p = subprocess.run(
        ["/usr/bin/time", "-v", "-o", tfile] + argv, cwd=d, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    wall = time.monotonic() - t0
    time.sleep(0.05)  # let sshd flush its log lines
    cpu, rss = parse_time(tfile)
    logins = lab.logins_since(off)
    if p.returncode != 0:
        log = os.path.join(args.work, f"failed-{runner}-{os.path.basename(d)}-n{n}-{time.time_ns()}.log")
        with open(log, "wb") as f:
            f.write(p.stdout)
        print(f"!! {runner} exit {p.returncode} in {d} N={n}: full output in {log}", file=sys.stderr)
    return {"wall": wall, "cpu": cpu, "rss_kib": rss, "logins": logins, "rc": p.returncode}


def ansible_allowed(args, kind, n, m):
    """The subset of cells ansible runs in (it is ~100x slower; see RESULTS.md)."""
    if args.ansible_all:
        return True
    return kind == "cmd" and (n, m) in {(1, 20), (1, 100), (5, 20), (20, 20), (20, 100)} or (
        kind in ("file", "loop") and (n, m) == (5, 20)
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kinit", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--hosts", default="1,5,20,50")
    ap.add_argument("--tasks", default="20,100")
    ap.add_argument("--workloads", default="cmd,file,loop")
    ap.add_argument("--runners", default=",".join(RUNNERS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rtt-ms", type=int, default=0, help="added round-trip time (delay proxy)")
    ap.add_argument("--ansible-all", action="store_true", help="run ansible in every cell")
    ap.add_argument("--port", type=int, default=22022, help="sshd port (one per concurrent run)")
    ap.add_argument("--json", help="append raw results here")
    args = ap.parse_args()
    hosts = [int(x) for x in args.hosts.split(",")]
    tasks = [int(x) for x in args.tasks.split(",")]
    runners = args.runners.split(",")
    os.makedirs(args.work, exist_ok=True)
    with open(os.path.join(args.work, "ansible.cfg"), "w") as f:
        f.write(
            "[defaults]\nhost_key_checking = False\nforks = 50\nretry_files_enabled = False\n"
            "interpreter_python = /usr/bin/python3\n"
        )
    lab = Lab(os.path.join(args.work, "lab"), max(hosts), args.rtt_ms, args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop sshd and proxy too
    results = []
    try:
        lab.start()
        for kind in args.workloads.split(","):
            for m in tasks:
                for n in hosts:
                    cell = write_all(args.work, lab, n, kind, m)
                    active = [
                        r for r in runners
                        if r in ("kinit", "pyinfra") or ansible_allowed(args, kind, n, m)
                    ]
                    samples = {r: [] for r in active}
                    for _ in range(args.reps):
                        for r in active:
                            samples[r].append(run_once(r, args, lab, cell, n))
                    for r in active:
                        row = summarize(kind, n, m, r, samples[r], args.rtt_ms)
                        results.append(row)
                        print(json.dumps(row), flush=True)
    finally:
        lab.stop()
    if args.json:
        with open(args.json, "a") as f:
            for row in results:
                f.write(json.dumps(row) + "\n")
    print(markdown(results))


def summarize(kind, n, m, runner, samples, rtt):
    med = lambda k: statistics.median(s[k] for s in samples)  # noqa: E731
    return {
        "workload": kind, "hosts": n, "tasks": m, "runner": runner, "rtt_ms": rtt,
        "runs": len(samples), "failed_runs": sum(1 for s in samples if s["rc"] != 0),
        "wall": med("wall"), "wall_min": min(s["wall"] for s in samples),
        "cpu": med("cpu"), "rss_kib": med("rss_kib"), "logins": med("logins"),
    }


def markdown(rows):
    out = [
        "| workload | RTT | N | M | runner | wall median (min) s | ms/task/host | vs kinit | "
        "CPU s | CPU ms/(task,host) | peak RSS MiB | logins/host | failed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = {(r["workload"], r["rtt_ms"], r["hosts"], r["tasks"]): r for r in rows if r["runner"] == "kinit"}
    for r in rows:
        k = base.get((r["workload"], r["rtt_ms"], r["hosts"], r["tasks"]))
        ratio = f"{r['wall'] / k['wall']:.1f}x" if k else "-"
        units = r["hosts"] * r["tasks"]
        out.append(
            f"| {r['workload']} | {r['rtt_ms']} | {r['hosts']} | {r['tasks']} | {r['runner']} | "
            f"{r['wall']:.3f} ({r['wall_min']:.3f}) | {1000 * r['wall'] / units:.2f} | {ratio} | "
            f"{r['cpu']:.2f} | {1000 * r['cpu'] / units:.2f} | {r['rss_kib'] / 1024:.1f} | "
            f"{r['logins'] / r['hosts']:.1f} | {r['failed_runs']}/{r['runs']} |"
        )
    # Per-task overhead at N=1: slope between the two task counts.
    for (wl, rtt), group in group_by(rows, lambda r: (r["workload"], r["rtt_ms"])).items():
        for runner, rs in group_by(group, lambda r: r["runner"]).items():
            ones = sorted((r["tasks"], r["wall"]) for r in rs if r["hosts"] == 1)
            if len(ones) >= 2:
                (m1, t1), (m2, t2) = ones[0], ones[-1]
                slope = 1000 * (t2 - t1) / (m2 - m1)
                out.append(f"\nper-task overhead {wl} RTT {rtt} ms N=1 {runner}: {slope:.2f} ms")
    return "\n".join(out)


def group_by(rows, key):
    g = {}
    for r in rows:
        g.setdefault(key(r), []).append(r)
    return g


if __name__ == "__main__":
    main()
