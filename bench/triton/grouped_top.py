#!/usr/bin/env python3
"""The N best configs of each problem of a ktune run, as Unsloth's grouped GEMM tuning prints them
(KernelResult.print_table: the config's parameters, torch_time, triton_time, speedup, sorted by
speedup): from the run's trials.csv, where examples/workers/triton_grouped_gemm.py records each
trial's speedup_vs_torch and torch_us. Times in µs; triton_time is the trial's search median.
Below each table, the winner ktune chose after re-measuring the best few in alternation
(results.json), which is the number to quote: the search's order can differ from it within noise.

    python3 bench/triton/grouped_top.py tuning_runs/<run> [--top 10] [--markdown]

Only ok trials are listed (slow_abort ones were stopped early, their medians are bounds). A run
whose trials carry no speedup_vs_torch (another worker's) is sorted by its medians, with no torch
columns. Standard library only."""
import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import ktune_results  # noqa: E402 (bench/: the one reader of a run's winners)

LEAD, TAIL_START = 3, "median_ns"  # trials.csv: id, problem, status, the parameters, median_ns, ...


def read_trials(run_dir):
    """(parameter names in the run's order, rows as dicts with 'metrics' parsed) of RUN_DIR/trials.csv."""
    path = os.path.join(run_dir, "trials.csv")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        if TAIL_START not in header:
            sys.exit(f"{path}: not a ktune trials.csv (no {TAIL_START} column)")
        params = header[LEAD:header.index(TAIL_START)]
        rows = []
        for row in reader:
            row["metrics"] = json.loads(row["metrics"]) if row.get("metrics") else {}
            rows.append(row)
    return params, rows


def shape_of(problem_key):
    """A trials.csv problem key as ktune_results keys a winner: its fields, sorted, whole numbers as int
    (",tp=T/dim" is not a field)."""
    fields = (kv.split("=", 1) for kv in problem_key.split(","))
    return tuple(sorted((k, int(v) if v.isdigit() else v) for k, v in fields if k != "tp"))


def winners(run_dir):
    """shape -> (re-measured median µs, config) of RUN_DIR's results.json; {} before the run ends."""
    if not os.path.exists(os.path.join(run_dir, "results.json")):
        return {}
    return ktune_results.winners(run_dir).by_shape


def top(params, rows, n):
    """problem key -> its n best ok trials as table rows (parameters, then torch_time, triton_time, speedup),
    problems in the order the run measured them."""
    by_problem = {}
    for row in rows:
        if row["status"] == "ok":
            by_problem.setdefault(row["problem"], []).append(row)
    tables = {}
    for problem, trials in by_problem.items():
        timed = all("speedup_vs_torch" in t["metrics"] for t in trials)
        trials.sort(key=(lambda t: -t["metrics"]["speedup_vs_torch"]) if timed else (lambda t: float(t["median_ns"])))
        table = []
        for t in trials[:n]:
            cells = [t[p] for p in params]
            if timed:
                cells += ["%.1f" % t["metrics"]["torch_us"], "%.1f" % (float(t["median_ns"]) / 1e3),
                          "%.3f" % t["metrics"]["speedup_vs_torch"]]
            else:
                cells.append("%.1f" % (float(t["median_ns"]) / 1e3))
            table.append(cells)
        tables[problem] = (params + (["torch_time", "triton_time", "speedup"] if timed else ["time"]), table)
    return tables


def format_table(header, rows, markdown):
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    return "\n".join(" ".join(c.rjust(w) for c, w in zip(line, widths)) for line in [header] + rows)


def report(run_dir, n, markdown, out=sys.stdout):
    params, rows = read_trials(run_dir)
    best = winners(run_dir)
    for problem, (header, table) in top(params, rows, n).items():
        print(f"{problem}  (times in µs)", file=out)
        print(format_table(header, table, markdown), file=out)
        if shape_of(problem) in best:
            us, config = best[shape_of(problem)]
            print("ktune's winner, re-measured: %.1f µs  %s" % (us, " ".join(f"{k}={v}" for k, v in config.items())),
                  file=out)
        print(file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", metavar="RUN_DIR", help="a ktune run folder (tuning_runs/<run>)")
    ap.add_argument("--top", type=int, default=10, metavar="N", help="configs a problem (default 10, Unsloth's)")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables (for bench/cuda/RESULTS.md)")
    a = ap.parse_args()
    if a.top < 1:
        ap.error(f"--top {a.top}: give at least 1")
    for run in a.runs:
        report(run, a.top, a.markdown)


if __name__ == "__main__":
    main()
