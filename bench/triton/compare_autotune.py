#!/usr/bin/env python3
"""ktune (through examples/workers/triton_matmul.py) against triton.autotune, over the same 72
configs on the same shapes, in one run on one GPU. Prints name=value lines:

  autotune_{cold,warm}_s_<shape>, ktune_{cold,warm}_s_<shape>: wall time to tune one shape
  wall_ratio_{cold,warm}_<shape> = autotune / ktune          (goal >= 3)
  winner_ratio_<shape> = ktune winner / autotune winner, both re-timed here with do_bench in
                         alternation (goal <= 1.02)

Cold = an empty Triton cache directory (every config compiles), warm = the same directory again
in a new process. Each side runs in its own process; a side's per-shape time is the time of the
first call on that shape (autotune) or from ktune's "problem" line to its "best" line; start-up
(Python, torch and Triton imports, CUDA context, the worker's hello) is in neither, and is in
the process times printed beside them (autotune_*_process_s, ktune_*_process_s).

    python3 bench/triton/compare_autotune.py --ktune build/app/cli/ktune [--shapes 16x4096x4096,...]
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(ROOT, "examples", "workers", "triton_matmul.py")


def load_worker():
    sys.path.insert(0, os.path.dirname(WORKER))
    import triton_matmul  # noqa: E402 (not __main__: defines the kernel and CONFIGS, serves nothing)
    return triton_matmul


def shape_name(s):
    return "x".join(map(str, s))


def autotune_child(shapes):
    """In a fresh process: triton.autotune over CONFIGS, the first call per shape timed."""
    import torch
    import triton
    tm = load_worker()
    configs = [triton.Config({k: v for k, v in c.items() if k not in ("num_warps", "num_stages")},
                             num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in tm.CONFIGS]
    tuned = triton.autotune(configs=configs, key=["M", "N", "K"])(tm.matmul_kernel)
    out = {}
    for M, N, K in shapes:
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16)
        c = torch.empty((M, N), device="cuda", dtype=torch.float16)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        tuned[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        torch.cuda.synchronize()
        best = tuned.best_config
        cfg = dict(best.kwargs, num_warps=best.num_warps, num_stages=best.num_stages)
        out[shape_name((M, N, K))] = {"s": time.perf_counter() - t0, "config": cfg}
    print(json.dumps(out))


def retime_child(pairs, reps):
    """In a fresh process: each shape's two winners timed with do_bench in alternation."""
    import torch
    import triton
    tm = load_worker()
    out = {}
    for name, (ktune_cfg, auto_cfg) in pairs.items():
        M, N, K = map(int, name.split("x"))
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((K, N), device="cuda", dtype=torch.float16)
        c = torch.empty((M, N), device="cuda", dtype=torch.float16)
        times = {"ktune": [], "autotune": []}
        for _ in range(reps):
            for side, cfg in (("ktune", ktune_cfg), ("autotune", auto_cfg)):
                times[side].append(triton.testing.do_bench(lambda: tm.launch(cfg, a, b, c)))
        med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        out[name] = {"ktune_ms": med["ktune"], "autotune_ms": med["autotune"]}
    print(json.dumps(out))


def child(args, env):
    r = subprocess.run([sys.executable, __file__] + args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args[:1])} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_ktune(ktune, shapes, cache, out_dir, name, extra):
    """Runs ktune on every shape in one process; a shape's time runs from its "problem i:" line to
    its "best" line (progress on stderr, flushed at each event), so the worker's start-up is in
    the process time only."""
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    if len({s[1:] for s in shapes}) != 1:
        sys.exit("--shapes must share N and K (one --shape with an M list)")
    N, K = shapes[0][1:]
    ms = ",".join(str(s[0]) for s in shapes)
    cmd = [ktune, "tune", "--worker", f"{sys.executable} {WORKER}", "--shape", f"M={ms} N={N} K={K}",
           "--output-dir", out_dir, "--run-name", name] + extra
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:  # the results table; progress comes on stderr
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        # (a progress bar, on a terminal only, would put "\r\033[K" before a line)
        lines = [(time.perf_counter() - t0, line.rstrip("\n").split("\r")[-1].replace("\033[K", ""))
                 for line in proc.stderr]
        wall = time.perf_counter() - t0
        if proc.wait() != 0:
            out.seek(0)
            sys.exit(f"ktune failed ({proc.returncode}):\n" + out.read()[-2000:] + "\n".join(l for _, l in lines[-40:]))
    run = os.path.join(out_dir, name)
    with open(os.path.join(run, "results.json")) as f:
        results = json.load(f)
    with open(os.path.join(run, "run_metadata.json")) as f:
        meta = json.load(f)
    # String parameters are recorded as their index into the candidate list; the parameter's
    # description says which is which ("0=, 1=.cg").
    strings = {p["name"]: dict(item.partition("=")[::2] for item in p["description"].split(", "))
               for p in meta["space"]["parameters"] if p.get("description")}
    winners = {}
    for res in results["results"]:
        p = res["problem"]["fields"]
        cfg = {k: (strings[k][str(v)] if k in strings else v) for k, v in res["config"].items()}
        winners[shape_name((p["M"], p["N"], p["K"]))] = cfg
    statuses = {}
    with open(os.path.join(run, "trials.csv")) as f:
        for row in csv.DictReader(f):
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    per, started, first = {}, None, None
    for t, line in lines:
        if line.startswith("problem ") and ": M=" in line:
            fields = dict(kv.split("=") for kv in line.split(": ", 1)[1].split()[0].split(","))
            started = (shape_name((int(fields["M"]), int(fields["N"]), int(fields["K"]))), t)
            first = t if first is None else first
        elif started and (line.startswith("  best ") or line.startswith("  no config")):
            per[started[0]] = t - started[1]
            started = None
    return {"wall": wall, "startup": first or 0.0, "per_shape": per, "winners": winners, "statuses": statuses}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ktune", default=os.path.join(ROOT, "build", "app", "cli", "ktune"))
    ap.add_argument("--shapes", default="16x4096x4096,1024x4096x4096,4096x4096x4096")
    ap.add_argument("--reps", type=int, default=7, help="do_bench alternations when re-timing the winners")
    ap.add_argument("--keep", help="keep the ktune runs and Triton caches in this folder")
    ap.add_argument("--ktune-args", default="", help="extra arguments to ktune tune")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--payload", help=argparse.SUPPRESS)
    a = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")]
    if a.child == "autotune":
        return autotune_child(shapes)
    if a.child == "retime":
        return retime_child(json.loads(a.payload), a.reps)

    work = a.keep or tempfile.mkdtemp(prefix="ktune_triton_")
    os.makedirs(work, exist_ok=True)
    auto_cache, ktune_cache = os.path.join(work, "cache_autotune"), os.path.join(work, "cache_ktune")
    for d in (auto_cache, ktune_cache):
        shutil.rmtree(d, ignore_errors=True)
    auto, kt = {}, {}
    for temp in ("cold", "warm"):
        t0 = time.perf_counter()
        auto[temp] = child(["--child", "autotune", "--shapes", a.shapes], dict(os.environ, TRITON_CACHE_DIR=auto_cache))
        print(f"autotune_{temp}_process_s={time.perf_counter() - t0:.2f}", flush=True)
        kt[temp] = run_ktune(a.ktune, shapes, ktune_cache, os.path.join(work, "runs"), f"triton_{temp}",
                             a.ktune_args.split())
        print(f"ktune_{temp}_process_s={kt[temp]['wall']:.2f}", flush=True)
        print(f"ktune_{temp}_startup_s={kt[temp]['startup']:.2f}", flush=True)
        print(f"ktune_{temp}_statuses={json.dumps(kt[temp]['statuses'], sort_keys=True)}", flush=True)
    pairs = {shape_name(s): (kt["warm"]["winners"][shape_name(s)], auto["warm"][shape_name(s)]["config"]) for s in shapes}
    times = child(["--child", "retime", "--payload", json.dumps(pairs), "--reps", str(a.reps)], dict(os.environ))
    for s in shapes:
        n = shape_name(s)
        for temp in ("cold", "warm"):
            at, kts = auto[temp][n]["s"], kt[temp]["per_shape"][n]
            print(f"autotune_{temp}_s_{n}={at:.2f}")
            print(f"ktune_{temp}_s_{n}={kts:.2f}")
            print(f"wall_ratio_{temp}_{n}={at / kts:.2f}")
        print(f"autotune_winner_{n}={json.dumps(pairs[n][1], sort_keys=True)}")
        print(f"ktune_winner_{n}={json.dumps(pairs[n][0], sort_keys=True)}")
        print(f"autotune_winner_ms_{n}={times[n]['autotune_ms']:.5f}")
        print(f"ktune_winner_ms_{n}={times[n]['ktune_ms']:.5f}")
        print(f"winner_ratio_{n}={times[n]['ktune_ms'] / times[n]['autotune_ms']:.4f}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
