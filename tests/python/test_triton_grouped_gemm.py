#!/usr/bin/env python3
"""examples/workers/triton_grouped_gemm.py without a GPU: it imports without torch and triton; its
flags narrow the space and name what they refuse; the family of its hello has the CUDA spec's key
fields, costs, splits and shape rules and Unsloth's rules as constraints, and ktune prunes its space
as the worker's own reading of them does (through `ktune tune --dry-run`, KTUNE_CLI); its routing is
moe_routing.py's (and so the native spec's) for the problem's experts, tokens and topk, shared by the
three passes, with hot and empty experts.

    test_triton_grouped_gemm.py          the parts that need only Python (and ktune)
    test_triton_grouped_gemm.py --torch  the workload, the reference and the launch's torch side
                                         (buffers, gathers and scatters around a stand-in for the
                                         Triton kernel) on the CPU: exits 77 (ctest: skipped) with
                                         the reason where torch is missing
"""
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import types
import unittest

sys.dont_write_bytecode = True  # importing the helper leaves no __pycache__ in the source tree
from worker_tests import (ROOT, assert_says_what_is_missing, load_worker, main, refused, worker_path,  # noqa: E402
                          write_serve)

WORKER = worker_path("triton_grouped_gemm")
SPEC = os.path.join(ROOT, "resources", "kernels", "cuda", "grouped_gemm.json")
gg = load_worker("triton_grouped_gemm")
import moe_routing  # noqa: E402 (the worker put bench/cuda on the path)

H100 = {"tma": 1.0, "smem_per_block": 232448.0}
AMPERE = {"tma": 0.0, "smem_per_block": 166912.0}


def shape(**fields):
    base = dict(experts=8, tokens=4096, topk=2, hidden=4096, intermediate=14336, dtype="bf16")
    base["pass"] = "fwd"
    return {**base, **fields}


def key(problem):
    """ktune's key of a problem: the fields in the family's order."""
    with open(SPEC) as f:
        names = [k["name"] for k in json.load(f)["key_fields"]]
    return ",".join(f"{n}={problem[n]}" for n in names)


class Flags(unittest.TestCase):
    def test_no_flags_is_the_whole_space(self):
        args, space = gg.parse_args([])
        self.assertEqual(space, gg.SPACE)
        self.assertEqual(args.device, 0)

    def test_flags_narrow_their_parameter_in_the_given_order(self):
        _, space = gg.parse_args(["--block-size-m", "128,16", "--num-stages", "4", "--permute-x", "0",
                                  "--use-tma-store", "true,false", "--device", "2"])
        self.assertEqual(space["BLOCK_SIZE_M"], [128, 16])
        self.assertEqual(space["num_stages"], [4])
        self.assertEqual(space["permute_x"], [False])
        self.assertEqual(space["use_tma_store"], [True, False])
        self.assertEqual(space["BLOCK_SIZE_N"], gg.SPACE["BLOCK_SIZE_N"])

    def test_every_parameter_has_a_flag(self):
        self.assertEqual(sorted(gg.FLAGS.values()), sorted(gg.SPACE))
        self.assertIn("--use-tma-load-dy", gg.FLAGS)

    def refused(self, argv):
        return refused(self, gg.parse_args, argv)

    def test_a_value_that_is_no_candidate_is_refused_naming_the_flag_and_the_candidates(self):
        self.assertIn("--block-size-k '64,48': [48] not among BLOCK_SIZE_K's candidates [64, 32, 128, 256]",
                      self.refused(["--block-size-k", "64,48"]))

    def test_values_of_the_wrong_kind_are_refused(self):
        self.assertIn("--num-warps 'four': expected comma-separated whole numbers", self.refused(["--num-warps", "four"]))
        self.assertIn("--permute-y 'yes': expected comma-separated 0 or 1 (true or false)",
                      self.refused(["--permute-y", "yes"]))

    def test_an_unknown_flag_is_refused(self):
        self.assertIn("unrecognized arguments: --flatten", self.refused(["--flatten", "1"]))


class Description(unittest.TestCase):
    def test_the_family_is_the_cuda_specs_key_fields_costs_and_rules(self):
        with open(SPEC) as f:
            spec = json.load(f)
        d = gg.family(gg.SPACE).to_json()
        self.assertEqual(d["name"], "grouped_gemm")
        want = [{"name": k["name"], "numeric": k.get("numeric", True), "default": k.get("default", ""),
                 "choices": k.get("choices", []), "help": k["help"]} for k in spec["key_fields"]]
        self.assertEqual(d["key_fields"], want)
        self.assertEqual([k["name"] for k in d["key_fields"]],
                         ["experts", "tokens", "topk", "hidden", "intermediate", "dtype", "pass"])
        for field in ("flops", "bytes", "bucket_field", "tp_out_field", "tp_in_field", "shape_rules"):
            self.assertEqual(d[field], spec[field], field)
        # Its routing is ktune's since workload rules 2, as the spec's: ktune refuses a run of it made before.
        self.assertEqual(d["workload_rules_since"], 2)
        self.assertEqual([p["name"] for p in d["space"]["parameters"]], list(gg.SPACE))
        self.assertEqual(d["space"]["constraints"], gg.CONSTRAINTS)
        self.assertEqual(d["default_config"], {k: v[0] for k, v in gg.SPACE.items()})
        self.assertTrue(all(gg.allowed(d["default_config"], shape(**{"pass": p}), AMPERE) for p in ("fwd", "dX", "dW")))

    def test_unsloths_rules_hold_in_every_pass(self):
        for p in ("fwd", "dX", "dW"):
            every = gg.configs(gg.SPACE, shape(**{"pass": p}), H100)
            with self.subTest(p=p):
                self.assertTrue(every)
                self.assertFalse([c for c in every if c["permute_x"] and c["permute_y"]])
                # A side the kernel gathers is never TMA-loaded; a side it scatters is never TMA-stored.
                self.assertFalse([c for c in every if c["use_tma_load_x"] and c["permute_x"]])
                self.assertFalse([c for c in every if c["use_tma_load_dy"] and c["permute_y"]])
                scattered = {"fwd": "permute_y", "dX": "permute_x"}.get(p)
                self.assertFalse([c for c in every if scattered and c["use_tma_store"] and c[scattered]])
                # Each pass TMA-loads only what it reads, and every load it has is searched.
                reads = {"fwd": {"use_tma_load_x", "use_tma_load_w"}, "dX": {"use_tma_load_dy", "use_tma_load_w"},
                         "dW": {"use_tma_load_dy", "use_tma_load_x"}}[p] | {"use_tma_store"}
                self.assertEqual({f for f in gg.TMA_FLAGS if any(c[f] for c in every)}, reads)

    def test_without_tma_no_config_asks_for_it_and_shared_memory_bounds_the_tiles(self):
        every = gg.configs(gg.SPACE, shape(), AMPERE)
        self.assertTrue(every)
        self.assertFalse([c for c in every if any(c[f] for f in gg.TMA_FLAGS)])
        big = gg.configs(gg.SPACE, shape(), H100)
        small = gg.configs(gg.SPACE, shape(), {"tma": 1.0, "smem_per_block": 49152.0})

        def smem(c):  # Unsloth's estimate: stages of the A and B tiles and the output tile, 2-byte elements
            m, n, k = c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["BLOCK_SIZE_K"]
            return (c["num_stages"] * k * (m + n) + m * n) * 2
        self.assertLessEqual(max(map(smem, small)), 49152 + 50000)  # and Unsloth's slack
        self.assertGreater(max(map(smem, big)), 49152 + 50000)
        self.assertFalse([c for c in big if c["BLOCK_SIZE_M"] * c["BLOCK_SIZE_N"] > 4096 * c["num_warps"]])

    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_ktune_reads_the_hello_and_prunes_as_the_worker_does(self):
        flags = ["--num-warps", "4", "--block-size-k", "64,256"]
        problems = [(shape(**{"pass": p}), props) for p in ("fwd", "dX", "dW") for props in (H100, AMPERE)]
        problems.append((shape(experts=64, topk=6, hidden=2048, intermediate=1408, **{"pass": "dW"}),
                         {"tma": 1.0, "smem_per_block": 101376.0}))
        _, space = gg.parse_args(flags)
        for problem, props in problems:
            with self.subTest(problem=key(problem), properties=props):
                run = self.dry_run(props, flags, "--shape", " ".join(f"{k}={v}" for k, v in problem.items()))
                self.assertEqual(run.returncode, 0, run.stderr + run.stdout)
                self.assertEqual([int(n) for n in re.findall(r"(\d+) after pruning", run.stdout)],
                                 [len(gg.configs(space, problem, props))], run.stdout)
                self.assertIn("grouped_gemm on test (triton)", run.stdout)

    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_the_specs_shape_rules_refuse_what_no_kernel_runs(self):
        with open(SPEC) as f:
            rules = json.load(f)["shape_rules"]
        for bad, rule in ((shape(experts=2, topk=3), rules[0]), (shape(hidden=4100), rules[1])):
            run = self.dry_run(H100, [], "--shape", " ".join(f"{k}={v}" for k, v in bad.items()))
            self.assertEqual(run.returncode, 2, run.stdout)
            self.assertIn(rule["description"], run.stderr)

    def dry_run(self, properties, flags, *args):
        with tempfile.TemporaryDirectory() as tmp:
            serve = write_serve(tmp, WORKER, {"backend": "triton", "name": "test", "properties": properties})
            return subprocess.run([os.environ["KTUNE_CLI"], "tune", "--worker",
                                   " ".join([sys.executable, "-B", serve] + flags), "--dry-run", "--output-dir", tmp,
                                   *args], capture_output=True, text=True, timeout=120)

    @unittest.skipIf(gg.torch is not None and gg.triton is not None, "torch and triton are here: the worker serves")
    def test_without_torch_or_triton_the_worker_says_what_is_missing(self):
        assert_says_what_is_missing(self, WORKER, 'a CUDA GPU')


class Routing(unittest.TestCase):
    def test_the_routing_is_moe_routings_for_the_problems_counts(self):
        p = shape(experts=16, tokens=300, topk=4, hidden=64, intermediate=32)
        as_sent = dict(sorted(p.items()))  # ktune's fields object: JSON, in no particular order
        self.assertEqual(gg.routing(as_sent, 5), moe_routing.routing(p, 5))
        # The native spec's "route" for these counts and seed, as the C++ pins it (tests/core/test_spec_routing.cpp).
        self.assertEqual(gg.routing(as_sent, 5)[0][:8], [12, 9, 10, 7, 11, 12, 9, 2])
        # Under --tp-size ktune sends the local shape (intermediate or hidden divided): the same routing.
        self.assertEqual(gg.routing({**p, "intermediate": 16}, 5), gg.routing(p, 5))
        self.assertEqual(gg.routing({**p, "hidden": 32}, 5), gg.routing(p, 5))

    def test_every_pass_shares_the_routing_and_each_seed_has_its_own(self):
        # A MoE layer's forward and backward passes route alike: at decode (8 experts, 16 tokens) a
        # routing per pass had fwd and dX read different experts' weights.
        p = shape(experts=8, tokens=16, topk=2)
        fwd = gg.routing(p, 0)[0]
        for pass_ in ("dX", "dW"):
            self.assertEqual(gg.routing({**p, "pass": pass_}, 0)[0], fwd)
        self.assertEqual(gg.routing({**p, "dtype": "f16"}, 0)[0], fwd)
        self.assertNotEqual(gg.routing(p, 1)[0], fwd)
        self.assertEqual(gg.routing(dict(p), 0)[0], fwd)

    def test_the_routing_has_hot_and_empty_experts(self):
        expert, offsets, rows = gg.routing(shape(experts=64, tokens=256, topk=6, hidden=2048, intermediate=1408), 0)
        counts = [b - a for a, b in zip(offsets, offsets[1:])]
        self.assertEqual(sum(counts), 256 * 6)
        self.assertIn(0, counts)
        self.assertGreater(max(counts), 4 * 256 * 6 / 64)
        self.assertEqual(sorted(rows), list(range(256 * 6)))
        self.assertTrue(all(expert[rows[s]] == e for e in range(64) for s in range(offsets[e], offsets[e + 1])))


class TopTable(unittest.TestCase):
    """bench/triton/grouped_top.py, Unsloth's table of a run's best configs, on a run folder of its own."""

    TAIL = ["median_ns", "mean_ns", "std_ns", "min_ns", "max_ns", "count", "compile_time_s", "tflops", "gbps",
            "max_abs_error", "mismatch_fraction", "started_at_s", "error", "samples_ns", "metrics"]

    def run_dir(self, tmp, trials, winner=None):
        import csv
        with open(os.path.join(tmp, "trials.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "problem", "status", "BLOCK_SIZE_M", "permute_x"] + self.TAIL)
            for i, (problem, status, bm, px, median, metrics) in enumerate(trials):
                w.writerow([i, problem, status, bm, px, median] + [0] * 12 + [1, json.dumps(metrics) if metrics else ""])
        if winner:
            with open(os.path.join(tmp, "results.json"), "w") as f:
                fields = dict(kv.split("=") for kv in winner[0].split(","))
                fields = {k: int(v) if v.isdigit() else v for k, v in fields.items()}
                json.dump({"benchmarking_method": "amortized", "results": [
                    {"problem": {"family": "grouped_gemm", "key": winner[0], "fields": fields}, "config": winner[1],
                     "stats": {"latency_median_ns": winner[2]}}]}, f)
        return tmp

    def report(self, run, *args):
        top = os.path.join(ROOT, "bench", "triton", "grouped_top.py")
        done = subprocess.run([sys.executable, "-B", top, run, *args], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_the_best_speedups_first_with_torch_and_triton_times_and_the_re_measured_winner(self):
        fwd, dw = "experts=8,pass=fwd", "experts=8,pass=dW"
        trials = [(fwd, "ok", 64, "true", 2000.0, {"speedup_vs_torch": 0.75, "torch_us": 1.5}),
                  (fwd, "ok", 128, "false", 1000.0, {"speedup_vs_torch": 1.5, "torch_us": 1.5}),
                  (fwd, "slow_abort", 16, "true", 500.0, {"speedup_vs_torch": 3.0, "torch_us": 1.5}),
                  (fwd, "wrong_result", 32, "true", 0, {}),
                  (dw, "ok", 32, "false", 4000.0, {"speedup_vs_torch": 0.5, "torch_us": 2.0})]
        with tempfile.TemporaryDirectory() as tmp:
            out = self.report(self.run_dir(tmp, trials, (fwd, {"BLOCK_SIZE_M": 128, "permute_x": False}, 990.0)),
                              "--top", "5")
        lines = out.splitlines()
        self.assertEqual(lines[0], fwd + "  (times in µs)")
        self.assertEqual(lines[1].split(), ["BLOCK_SIZE_M", "permute_x", "torch_time", "triton_time", "speedup"])
        self.assertEqual([line.split() for line in lines[2:4]], [["128", "false", "1.5", "1.0", "1.500"],
                                                                 ["64", "true", "1.5", "2.0", "0.750"]])
        self.assertEqual(lines[4], "ktune's winner, re-measured: 1.0 µs  BLOCK_SIZE_M=128 permute_x=False")
        self.assertIn(dw + "  (times in µs)", out)
        self.assertNotIn("  16 ", out)  # slow_abort: a bound, not a time

    def test_top_n_cuts_and_a_run_without_speedups_sorts_by_time(self):
        trials = [("n=1", "ok", m, "true", 1000.0 * m, None) for m in (64, 16, 128, 32)]
        with tempfile.TemporaryDirectory() as tmp:
            out = self.report(self.run_dir(tmp, trials), "--top", "2", "--markdown")
        self.assertEqual(out.splitlines()[1:5], ["| BLOCK_SIZE_M | permute_x | time |", "|---|---|---|",
                                                 "| 16 | true | 16.0 |", "| 32 | true | 32.0 |"])


class BaselineTiming(unittest.TestCase):
    """torch's time for speedup_vs_torch is taken as a config's is: --warmup-ms of warm-up first."""

    def test_the_baseline_warms_up_warmup_ms_before_its_samples(self):
        calls = []

        def timer(fn, launches):
            calls.append(time.monotonic())
            time.sleep(0.002)
            return 2e6

        settings = {"warmup_ms": 40.0, "min_samples": 5, "max_samples": 5, "min_sample_ms": 2.0}
        self.assertEqual(gg.triton_common._median_ns(lambda: None, "amortized", settings, timer, 5), 2e6)
        # the first call calibrates the launches a sample; the last five are the samples
        self.assertGreaterEqual(calls[-5] - calls[1], 0.04)


class TorchWorkload(unittest.TestCase):
    """The workload, the reference and the launch's torch side, on the CPU (run with --torch)."""

    p = dict(experts=6, tokens=21, topk=2, hidden=24, intermediate=40, dtype="bf16")

    def problem(self, pass_):
        return {**self.p, "pass": pass_}

    def setUp(self):
        self.torch = gg.torch
        self.x = {p: gg.workload(self.problem(p), seed=3, device="cpu") for p in ("fwd", "dX", "dW")}

    def brute_force(self, pass_, x, expert):
        """Routed row by routed row (and dW expert by expert), in f64, from the routing's experts."""
        torch, topk = self.torch, self.p["topk"]
        if pass_ == "dW":
            dw = torch.zeros(self.p["experts"], self.p["intermediate"], self.p["hidden"], dtype=torch.float64)
            for r, e in enumerate(expert):
                dw[e] += torch.outer(x["dy"][r].double(), x["x"][r // topk].double())
            return dw
        rows = []
        for r, e in enumerate(expert):
            w = x["w"][e].double()
            rows.append(x["x"][r // topk].double() @ w.t() if pass_ == "fwd" else x["dy"][r].double() @ w)
        return torch.stack(rows)

    def test_the_tensors_are_the_problem_and_follow_the_seed(self):
        torch, p = self.torch, self.p
        self.assertEqual(tuple(self.x["fwd"]["x"].shape), (21, 24))
        self.assertEqual(tuple(self.x["fwd"]["w"].shape), (6, 40, 24))
        self.assertEqual(tuple(self.x["dX"]["dy"].shape), (42, 40))
        self.assertEqual({k for k in ("x", "w", "dy") if k in self.x["fwd"]}, {"x", "w"})
        self.assertEqual({k for k in ("x", "w", "dy") if k in self.x["dX"]}, {"w", "dy"})
        self.assertEqual({k for k in ("x", "w", "dy") if k in self.x["dW"]}, {"x", "dy"})
        self.assertEqual(self.x["fwd"]["x"].dtype, torch.bfloat16)
        self.assertLessEqual(self.x["fwd"]["w"].abs().max().item(), 1.0)
        self.assertGreater(self.x["fwd"]["w"].abs().max().item(), 0.9)
        _, offsets, rows = gg.routing(self.problem("fwd"), 3)
        self.assertEqual(self.x["fwd"]["offsets"].tolist(), offsets)
        self.assertEqual(self.x["fwd"]["rows"].tolist(), rows)
        self.assertEqual(self.x["fwd"]["toks"].tolist(), [r // p["topk"] for r in rows])
        self.assertTrue(torch.equal(gg.workload(self.problem("fwd"), seed=3, device="cpu")["w"], self.x["fwd"]["w"]))
        self.assertFalse(torch.equal(gg.workload(self.problem("fwd"), seed=4, device="cpu")["w"], self.x["fwd"]["w"]))

    def test_the_reference_is_each_routed_row_through_its_own_expert(self):
        for pass_ in ("fwd", "dX", "dW"):
            with self.subTest(pass_=pass_):
                x = self.x[pass_]
                expert = gg.routing(self.problem(pass_), 3)[0]
                ref = gg.reference(self.problem(pass_), x)
                self.assertLess((ref.double() - self.brute_force(pass_, x, expert)).abs().max().item(), 1e-3)

    def test_an_expert_nobody_chose_has_a_zero_gradient(self):
        problem = {**self.p, "experts": 40, "pass": "dW"}
        x = gg.workload(problem, seed=3, device="cpu")
        offsets = x["offsets_list"]
        empty = [e for e in range(40) if offsets[e] == offsets[e + 1]]
        self.assertTrue(empty)
        ref = gg.reference(problem, x)
        self.assertTrue(all(ref[e].abs().max().item() == 0 for e in empty))

    def test_a_kernel_ignoring_the_routing_would_fail_the_check(self):
        tol = gg.kw.Tolerance()  # ktune's default --atol and --rtol
        for pass_ in ("fwd", "dX", "dW"):
            with self.subTest(pass_=pass_):
                x = self.x[pass_]
                ref = gg.reference(self.problem(pass_), x)
                expert = gg.routing(self.problem(pass_), 3)[0]
                shifted = [(e + 1) % self.p["experts"] for e in expert]  # every row to another expert
                _, mismatch = gg.compare(self.brute_force(pass_, x, shifted).float(), ref, tol)
                self.assertGreater(mismatch, 0.5)
                self.assertEqual(gg.compare(self.brute_force(pass_, x, expert).float(), ref, tol)[1], 0.0)

    def test_compare_counts_nan_as_a_mismatch(self):
        ref = gg.reference(self.problem("fwd"), self.x["fwd"])
        out = ref.clone()
        out[0, 0] = float("nan")
        err, frac = gg.compare(out, ref, gg.kw.Tolerance())
        self.assertEqual(err, float("inf"))
        self.assertAlmostEqual(frac, 1 / ref.numel())

    def test_every_fusion_of_every_pass_routes_its_sides_through_the_right_buffers(self):
        """Launch with a stand-in for the Triton kernel that does what the kernel's docstring says with
        the arguments it is given: the unfused sides' gathers and scatters, the argument order and the
        fused flags must add up to the reference, and no TMA flag the constraints allow may meet the
        kernel's static asserts (a TMA box on a side it gathers or scatters)."""
        saved = (gg.grouped_rows_kernel, gg.grouped_dw_kernel, gg.triton)
        gg.grouped_rows_kernel, gg.grouped_dw_kernel = StandIn(self.torch, dw=False), StandIn(self.torch, dw=True)
        gg.triton = types.SimpleNamespace(set_allocator=lambda fn: None)
        try:
            for pass_ in ("fwd", "dX", "dW"):
                x = dict(self.x[pass_], programs=4, stand_in=self.x[pass_].get("w", self.x[pass_].get("dy")))
                ref = gg.reference(self.problem(pass_), x)
                for px, py, tma in itertools.product((True, False), (False, True), (False, True)):
                    config = {**{k: v[0] for k, v in gg.SPACE.items()}, "permute_x": px, "permute_y": py}
                    for flag in gg.TMA_FLAGS if tma else ():  # every TMA flag the constraints allow with these
                        config[flag] = gg.allowed({**config, flag: True}, self.problem(pass_), H100)
                    if not gg.allowed(config, self.problem(pass_), H100):
                        continue
                    with self.subTest(pass_=pass_, permute_x=px, permute_y=py, tma=tma):
                        launch = gg.Launch(config, self.problem(pass_), x)
                        launch.compile()
                        out = launch()
                        self.assertEqual(gg.compare(out, ref, gg.kw.Tolerance())[1], 0.0)
                        # one torch launch (a gather before the kernel or a scatter after it) a side not fused
                        self.assertEqual(len(launch.gathers) + launch.scatter_after, (not px) + (not py))
                        # and each TMA flag the config sets reaches the kernel as one of its TMA switches
                        switches = [k for k, v in launch.meta.items() if k.startswith("TMA_") and v]
                        self.assertEqual(len(switches), sum(config[f] for f in gg.TMA_FLAGS), switches)
        finally:
            gg.grouped_rows_kernel, gg.grouped_dw_kernel, gg.triton = saved


class StandIn:
    """grouped_rows_kernel / grouped_dw_kernel in torch, from their docstrings: kernel[grid](*args, **meta)
    runs them; warmup checks only that it is given what a launch is."""

    def __init__(self, torch, dw):
        self.torch, self.dw = torch, dw

    def warmup(self, *args, grid, **meta):
        assert len(args) == 10 and len(grid) == 1, (args, grid)

    def __getitem__(self, grid):
        return lambda *args, **meta: (self.run_dw if self.dw else self.run_rows)(*args, **meta)

    def run_rows(self, a, a_index, w, out, rows, offsets, R, K, N, programs, **meta):
        assert not (meta["TMA_A"] and meta["GATHER_A"]) and not (meta["TMA_STORE"] and meta["SCATTER_OUT"]), meta
        offsets, f32 = offsets.tolist(), self.torch.float32
        for e, (s0, s1) in enumerate(zip(offsets, offsets[1:])):
            pos = self.torch.arange(s0, s1)
            a_s = a[a_index[s0:s1].long()] if meta["GATHER_A"] else a[pos]
            w_e = w[e].to(f32) if meta["W_KN"] else w[e].to(f32).t()
            assert a_s.shape[1] == K and w_e.shape == (K, N), (a_s.shape, w_e.shape, K, N)
            out[rows[s0:s1].long() if meta["SCATTER_OUT"] else pos] = (a_s.to(f32) @ w_e).to(out.dtype)

    def run_dw(self, dy, x, out, rows, toks, offsets, R, I, H, programs, **meta):
        assert not (meta["TMA_DY"] and meta["GATHER_DY"]) and not (meta["TMA_X"] and meta["GATHER_X"]), meta
        offsets, f32 = offsets.tolist(), self.torch.float32
        for e, (s0, s1) in enumerate(zip(offsets, offsets[1:])):
            pos = self.torch.arange(s0, s1)
            dy_s = dy[rows[s0:s1].long()] if meta["GATHER_DY"] else dy[pos]
            x_s = x[toks[s0:s1].long()] if meta["GATHER_X"] else x[pos]
            out[e] = (dy_s.to(f32).t() @ x_s.to(f32)).to(out.dtype)


if __name__ == "__main__":
    main(gg, (Flags, Description, Routing, TopTable, BaselineTiming), [TorchWorkload])
