#!/usr/bin/env python3
"""bench/ktune_results.py, the one reader of a run's results.json that the paged attention bench
scripts share: winners keyed by their shape whatever order results.json lists the fields in, their
re-measured median in µs, the run's method and workload seed; bench/cuda/paged_report.py's and
grouped_report.py's tables built from it, the latter refusing runs and baselines of different
workloads (the seed, or the workload rules a MoE routing was drawn by) and saying the SM clocks the
native winner and torch were timed at (python/ktune_worker/gpu_conditions.py, the NVML reader the
bench scripts share with ktune_worker, is tested in test_ktune_worker.py)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "bench"))
import ktune_results  # noqa: E402

SHAPE = {"num_sequences": 4, "num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "page_size": 16,
         "max_model_len": 1024, "min_len": 1024, "dtype": "f16"}


def write_run(folder, median_ns, method="per_launch", config=None, shape=None, seed=0, rules=2, conditions=None,
              family="paged_attention"):
    os.makedirs(folder)
    if seed is not None:
        meta = {"run": os.path.basename(folder), "seed": seed}
        if rules is not None:  # metadata from before runs recorded their workload rules: rules 1
            meta["workload_rules"] = rules
        with open(os.path.join(folder, "run_metadata.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f)
    result = {"problem": {"family": "paged_attention", "fields": dict(reversed(list((shape or SHAPE).items())))},
              "config": config or {"TOKENS": 16, "WARPS": 4},
              "stats": {"latency_median_ns": median_ns, "latency_avg_ns": median_ns + 10}}
    if conditions is not None:  # runs from before ktune recorded the GPU's conditions have none
        result["conditions"] = conditions
    with open(os.path.join(folder, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"run": os.path.basename(folder), "family": family, "backend": "cuda",
                   "benchmarking_method": method, "results": [result]}, f)
    return folder


class BenchResultsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_dir(self, name, median_ns, **kw):
        return write_run(os.path.join(self.tmp.name, name), median_ns, **kw)

    def test_winners(self):
        w = ktune_results.winners(self.run_dir("cold", 25500.0))
        self.assertEqual(w.method, "per_launch")
        self.assertEqual(w.by_shape, {tuple(sorted(SHAPE.items())): (25.5, {"TOKENS": 16, "WARPS": 4})})
        w = ktune_results.winners(self.run_dir("warm", 1000.0, method="amortized", seed=7))
        self.assertEqual((w.method, list(w.by_shape.values())[0][0], w.seed, w.rules), ("amortized", 1.0, 7, 2))
        self.assertEqual(ktune_results.winners(self.run_dir("old", 1000.0, rules=None)).rules, 1)
        bare = ktune_results.winners(self.run_dir("bare", 1000.0, seed=None))
        self.assertEqual((bare.seed, bare.rules), (None, None))
        # the winner's conditions beside by_shape, whose (µs, config) its callers unpack; {} for old runs
        self.assertEqual(w.conditions, {tuple(sorted(SHAPE.items())): {}})
        held = {"sm_clock_mhz": 1425.0, "power_w": 688.1, "clock_limited": 1.0}
        w = ktune_results.winners(self.run_dir("new", 1000.0, conditions=held))
        shape = tuple(sorted(SHAPE.items()))
        self.assertEqual((w.by_shape[shape][0], w.conditions), (1.0, {shape: held}))

    def test_paged_report_reads_through_it(self):
        runs = [self.run_dir("attn_cold", 20000.0), self.run_dir("attn_warm", 10000.0, method="amortized"),
                self.run_dir("read_cold", 15000.0), self.run_dir("read_warm", 8000.0, method="amortized")]
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "cuda", "paged_report.py")] + runs,
                             check=True, capture_output=True, text=True).stdout
        self.assertIn("| 4 | 32/8 | 128 | 16 | 1024 | full | cold | 20.0 | 15.0 | 75.0 % | - | - | TOKENS=16 WARPS=4 |",
                      out)
        self.assertIn("| warm | 10.0 | 8.0 | 80.0 % |", out)

    def grouped_folder(self, native_seed=0, read_seed=0, torch_seed=0, native_rules=2, torch_rules=2,
                       native_conditions=None, torch_conditions=None):
        """torch_conditions: {baseline: the conditions of its warm line}."""
        decode = {"experts": 8, "tokens": 16, "topk": 2, "hidden": 4096, "intermediate": 14336, "dtype": "bf16",
                  "pass": "dX"}
        self.run_dir("gexperts-8_tokens-16_topk-2", 280000.0, method="amortized", shape=decode, config={"WGMMA": 1},
                     seed=native_seed, rules=native_rules, conditions=native_conditions)
        self.run_dir("read_decode", 266000.0, method="amortized", shape=decode, config={"THREADS": 512},
                     seed=read_seed)
        key = "experts=8,tokens=16,topk=2,hidden=4096,intermediate=14336,dtype=bf16,pass=dX"
        with open(os.path.join(self.tmp.name, "torch.jsonl"), "w", encoding="utf-8") as f:
            for baseline, mode, us in (("torch._grouped_mm", "warm", 322.0), ("per-expert torch.mm", "warm", 308.0),
                                       ("cuBLAS grouped", "warm", 350.0),
                                       ("per-expert torch.mm", "cold", 100.0)):  # cold lines are not compared
                line = {"key": key, "pass": "dX", "mode": mode, "baseline": baseline, "median_us": us,
                        "settle_s": 2.0 if mode == "warm" else 0}
                if torch_seed is not None:  # lines from before grouped_torch.py said its seed: seed 0
                    line["seed"] = torch_seed
                if torch_rules is not None:  # and from before they said their rules: rules 1
                    line["workload_rules"] = torch_rules
                if mode == "warm" and baseline in (torch_conditions or {}):
                    line["conditions"] = torch_conditions[baseline]
                f.write(json.dumps(line) + "\n")
            # a baseline this torch lacks is said, not timed: no time to compare
            f.write(json.dumps({"key": key, "pass": "dX", "mode": "warm", "baseline": "cuBLAS grouped",
                                "error": "no cublasGemmGroupedBatchedEx"}) + "\n")
        return subprocess.run([sys.executable, os.path.join(ROOT, "bench", "cuda", "grouped_report.py"),
                               self.tmp.name], capture_output=True, text=True)

    def test_grouped_report_pairs_each_winner_with_torch_and_the_read_ceiling(self):
        done = self.grouped_folder(torch_seed=None)
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout
        # the speedup is over the faster of torch's two (the goal); cuBLAS's grouped call beside it
        # runs and lines from before either recorded the GPU's conditions: no clocks, no note
        self.assertIn("| 280.0 | 322.0 | 308.0 | 1.100 | 350.0 | 1.250 | 266.0 | 95.0 % | - | - | WGMMA=1 |", out)
        self.assertIn("| native MHz | torch MHz | config |", out)
        self.assertNotIn("clock difference", out)
        # and how long the baselines ran before they were timed (the clocks they were timed at)
        self.assertIn("after 2 s of back-to-back calls each", out)

    def test_grouped_report_says_the_clocks_each_side_was_timed_at(self):
        held = {"sm_clock_mhz": 1425.0, "power_w": 688.1, "clock_limited": 1.0}
        # the faster baseline (the loop, 308 µs) at 1,620 MHz: 13.7 % above the native winner's clock
        done = self.grouped_folder(native_conditions=held, torch_conditions={
            "per-expert torch.mm": {"sm_clock_mhz": 1620.0, "power_w": 540.0, "clock_limited": 0.0},
            "torch._grouped_mm": {"sm_clock_mhz": 1425.0}})  # not the faster one: not shown
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("| 266.0 | 95.0 % | 1,425 MHz, 688 W | 1,620 MHz, 540 W | WGMMA=1 |", done.stdout)
        self.assertIn("topk=2: the native winner was timed at 1,425 MHz, per-expert torch.mm at 1,620 MHz "
                      "(+13.7 %): the speedup carries that clock difference", done.stdout)
        for torch_side, shown in (({"sm_clock_mhz": 1460.0}, "1,460 MHz"),  # 2.5 % apart: no note
                                  ({"power_w": 700.0}, "700 W"),  # no clock read: nothing to compare
                                  (None, "-")):  # an old torch.jsonl beside a new run
            with self.subTest(torch=torch_side):
                self.tmp.cleanup()
                os.makedirs(self.tmp.name)
                done = self.grouped_folder(native_conditions=held,
                                           torch_conditions={"per-expert torch.mm": torch_side} if torch_side else None)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIn(f"| 1,425 MHz, 688 W | {shown} | WGMMA=1 |", done.stdout)
                self.assertNotIn("clock difference", done.stdout)

    def test_grouped_report_refuses_runs_of_another_workload(self):
        # At decode the seed decides even which experts are read (6 of 8 at seed 0, 7 at seed 1), and
        # so did the rules (rules 1 routed each pass's key apart).
        for seeds, culprit in (({"native_seed": 1}, "gexperts-8_tokens-16_topk-2: workload seed 1, workload rules 2"),
                               ({"read_seed": 2}, "read_decode: workload seed 2"),
                               ({"torch_seed": 3}, "torch.jsonl: workload seed 3"),
                               ({"native_rules": None}, "gexperts-8_tokens-16_topk-2: workload seed 0, workload rules 1"),
                               ({"torch_rules": None}, "torch.jsonl: workload seed 0, workload rules 1"),
                               ({"native_seed": None}, "unknown (no run_metadata.json)")):
            with self.subTest(**seeds):
                self.tmp.cleanup()
                os.makedirs(self.tmp.name)
                done = self.grouped_folder(**seeds)
                self.assertNotEqual(done.returncode, 0)
                self.assertNotIn("| 280.0 |", done.stdout)
                self.assertIn("the workloads differ", done.stderr)
                self.assertIn(culprit, done.stderr)

    def test_grouped_compare_tunes_the_worker_on_the_native_runs_workload(self):
        sys.path.insert(0, os.path.join(ROOT, "bench", "triton"))
        import grouped_compare
        decode = {"experts": 8, "tokens": 16, "topk": 2, "hidden": 4096, "intermediate": 14336, "dtype": "bf16",
                  "pass": "fwd"}
        self.run_dir("gexperts-8_tokens-16_topk-2", 275000.0, method="amortized", shape=decode, seed=1,
                     family="grouped_gemm")
        # the stage's read ceiling beside it has the same key, and is not the native kernel's time
        self.run_dir("read_decode", 157000.0, method="amortized", shape=decode, seed=1, family="grouped_read")
        self.assertEqual(list(grouped_compare.native_winners(self.tmp.name, 1).values()), [275.0])
        with self.assertRaises(SystemExit) as e:
            grouped_compare.native_winners(self.tmp.name, 0)
        self.assertIn("gexperts-8_tokens-16_topk-2: workload seed 1, workload rules 2", str(e.exception))
        self.assertIn("--workload-seed: workload seed 0, workload rules 2", str(e.exception))
        # a native run from before the routing rule changed (rules 1) routed otherwise than the worker
        old = os.path.join(self.tmp.name, "old")
        os.makedirs(old)
        self.run_dir(os.path.join("old", "gexperts-8_tokens-16_topk-2"), 275000.0, method="amortized",
                     shape=decode, seed=1, rules=None, family="grouped_gemm")
        with self.assertRaises(SystemExit) as e:
            grouped_compare.native_winners(old, 1)
        self.assertIn("workload rules 1", str(e.exception))

    def test_paged_compare_reads_through_it(self):
        sys.path.insert(0, os.path.join(ROOT, "bench", "triton"))
        import paged_compare
        self.assertIs(paged_compare.winners, ktune_results.winners)


if __name__ == "__main__":
    unittest.main()
