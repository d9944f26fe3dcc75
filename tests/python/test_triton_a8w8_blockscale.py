#!/usr/bin/env python3
"""examples/workers/triton_a8w8_blockscale.py without a GPU: it imports without torch and triton; its
flags narrow the space and name what they refuse; the family of its hello has the CPU family's key
fields and costs (read from its C++ source) and aiter's rules as constraints, and ktune prunes its
space as the worker's own reading of them does (through `ktune tune --dry-run`, KTUNE_CLI); a run
of the worker's family (a ktune run through a stand-in for the GPU parts) exports with `ktune
registry export --format aiter` into files that aiter's loader (re-implemented as
tests/core/test_registry_format_aiter.cpp does) reads back as the run's winners.

    test_triton_a8w8_blockscale.py          the parts that need only Python (and ktune)
    test_triton_a8w8_blockscale.py --torch  the workload (pinned against the CPU family's C++
                                            generator), the e4m3 codes, the reference and the
                                            launch's buffers and split-K around a stand-in kernel,
                                            on the CPU; exits 77 (ctest: skipped) where torch is
                                            missing. torch without float8_e4m3fn (before 2.1) runs
                                            the launch for int8 only: the workload's e4m3 codes are
                                            bytes, encoded and decoded here without torch's type.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # importing the helper leaves no __pycache__ in the source tree
from worker_tests import (ROOT, assert_says_what_is_missing, load_worker, main, refused, worker_path,  # noqa: E402
                          write_serve)

WORKER = worker_path("triton_a8w8_blockscale")
CPU_FAMILY = os.path.join(ROOT, "core", "backends", "cpu", "src", "gemm_a8w8_blockscale_family.cpp")
ab = load_worker("triton_a8w8_blockscale")

H100 = {"amd": 0.0, "smem_per_block": 232448.0}
MI300 = {"amd": 1.0, "smem_per_block": 65536.0}
SMALL = {"amd": 0.0, "smem_per_block": 49152.0}


def shape(**fields):
    return {**dict(M=128, N=4096, K=4096, q_dtype="fp8_e4m3", out_dtype="bf16"), **fields}


def shape_arg(problem):
    return " ".join(f"{k}={v}" for k, v in problem.items())


class Flags(unittest.TestCase):
    def test_no_flags_is_the_whole_space(self):
        args, space = ab.parse_args([])
        self.assertEqual(space, ab.SPACE)
        self.assertEqual(args.device, 0)
        self.assertFalse(args.fast_accum)  # full f32 promotion unless asked: within the default tolerance

    def test_fast_accumulation_is_asked_for_and_leaves_the_space_alone(self):
        args, space = ab.parse_args(["--fast-accum"])
        self.assertTrue(args.fast_accum)
        self.assertEqual(space, ab.SPACE)

    def test_flags_narrow_their_parameter_in_the_given_order(self):
        _, space = ab.parse_args(["--block-size-m", "128,32", "--num-ksplit", "4", "--cache-modifier", ".cg,none",
                                  "--waves-per-eu", "8", "--device", "1"])
        self.assertEqual(space["BLOCK_SIZE_M"], [128, 32])
        self.assertEqual(space["NUM_KSPLIT"], [4])
        self.assertEqual(space["cache_modifier"], [".cg", ""])
        self.assertEqual(space["waves_per_eu"], [8])
        self.assertEqual(space["BLOCK_SIZE_N"], ab.SPACE["BLOCK_SIZE_N"])

    def test_every_parameter_has_a_flag(self):
        self.assertEqual(sorted(ab.FLAGS.values()), sorted(ab.SPACE))

    def refused(self, argv):
        return refused(self, ab.parse_args, argv)

    def test_a_value_that_is_no_candidate_is_refused_naming_the_flag_and_the_candidates(self):
        self.assertIn("--block-size-k '128,64': [64] not among BLOCK_SIZE_K's candidates [128]",
                      self.refused(["--block-size-k", "128,64"]))
        self.assertIn("--cache-modifier '.ca': ['.ca'] not among cache_modifier's candidates ['', '.cg']",
                      self.refused(["--cache-modifier", ".ca"]))

    def test_values_of_the_wrong_kind_are_refused(self):
        self.assertIn("--num-warps 'four': expected comma-separated whole numbers", self.refused(["--num-warps", "four"]))


class Description(unittest.TestCase):
    def test_the_family_is_the_cpu_familys_key_and_costs(self):
        with open(CPU_FAMILY) as f:
            cpp = f.read()
        d = ab.family(ab.SPACE).to_json()
        self.assertEqual(d["name"], "gemm_a8w8_blockscale")
        # f.key_fields = {{"M", true, "", {}, "help"}, ...} in the C++ family
        fields = re.findall(r'\{"(\w+)", (true|false), "([^"]*)", \{([^}]*)\}, "([^"]*)"\}', cpp)
        want = [{"name": n, "numeric": num == "true", "default": default,
                 "choices": re.findall(r'"([^"]+)"', choices), "help": help_} for n, num, default, choices, help_ in fields]
        self.assertEqual([k["name"] for k in want], ["M", "N", "K", "q_dtype", "out_dtype"])
        self.assertEqual(d["key_fields"], want)
        self.assertIn(f'f.flops_expr = "{d["flops"]}";', cpp)
        self.assertIn("f.bytes_expr = " + json.dumps(d["bytes"]) + ";", cpp)
        self.assertEqual((d["bucket_field"], d["tp_out_field"], d["tp_in_field"]), ("M", "N", "K"))
        self.assertEqual([p["name"] for p in d["space"]["parameters"]], list(ab.SPACE))
        self.assertEqual(d["space"]["constraints"], ab.CONSTRAINTS)
        self.assertTrue(all(ab.allowed(d["default_config"], shape(M=m), props)
                            for m in (1, 4096) for props in (H100, MI300, SMALL)))

    def test_amd_launch_options_are_searched_on_amd_only(self):
        nvidia, amd = ab.configs(ab.SPACE, shape(), H100), ab.configs(ab.SPACE, shape(), MI300)
        self.assertEqual({(c["waves_per_eu"], c["kpack"]) for c in nvidia}, {(2, 2)})
        self.assertEqual({(c["waves_per_eu"], c["kpack"]) for c in amd},
                         {(w, k) for w in ab.SPACE["waves_per_eu"] for k in ab.SPACE["kpack"]})

    def test_aiters_rules_hold(self):
        every = ab.configs(ab.SPACE, shape(K=384), H100)  # 3 K blocks: no split divides them
        self.assertEqual({c["NUM_KSPLIT"] for c in every}, {1})
        every = ab.configs(ab.SPACE, shape(K=4096), H100)
        self.assertEqual({c["NUM_KSPLIT"] for c in every}, {1, 2, 4})
        self.assertFalse([c for c in every if c["NUM_KSPLIT"] > 1 and c["GROUP_SIZE_M"] != 1])
        self.assertEqual({c["GROUP_SIZE_M"] for c in ab.configs(ab.SPACE, shape(M=16), H100)}, {1})
        small = ab.configs(ab.SPACE, shape(), SMALL)
        self.assertTrue(small)
        self.assertLessEqual(max(c["num_stages"] * 128 * (c["BLOCK_SIZE_M"] + c["BLOCK_SIZE_N"]) for c in small), 49152)
        self.assertLess(len(small), len(every))

    def test_speedups_prefer_the_blockwise_baseline(self):
        samples = [1000.0, 2000.0, 3000.0]  # median 2 µs
        both = ab.speedup_metrics({"scaled_mm_blockwise_us": 3000.0, "scaled_mm_tensorwise_us": 1000.0}, samples)
        self.assertEqual(both, {"scaled_mm_blockwise_us": 3.0, "scaled_mm_tensorwise_us": 1.0,
                                "speedup_vs_scaled_mm": 1.5, "scaled_mm_baseline": 1.0})
        tensorwise = ab.speedup_metrics({"scaled_mm_tensorwise_us": 1000.0}, samples)
        self.assertEqual((tensorwise["speedup_vs_scaled_mm"], tensorwise["scaled_mm_baseline"]), (0.5, 0.0))
        self.assertEqual(ab.speedup_metrics({"int_mm_us": 4000.0}, samples), {"int_mm_us": 4.0, "speedup_vs_int_mm": 2.0})
        self.assertEqual(ab.speedup_metrics({}, samples), {})

    @unittest.skipIf(ab.torch is not None and ab.triton is not None, "torch and triton are here: the worker serves")
    def test_without_torch_or_triton_the_worker_says_what_is_missing(self):
        assert_says_what_is_missing(self, WORKER, 'a GPU')


class Report(unittest.TestCase):
    """bench/triton/a8w8_report.py: a run's winners beside the baselines its trials recorded."""

    def test_each_winner_beside_its_problems_baselines(self):
        keys = ["M=16,N=4096,K=4096,q_dtype=fp8_e4m3,out_dtype=bf16", "M=1024,N=4096,K=4096,q_dtype=fp8_e4m3,out_dtype=bf16"]
        config = {**{k: v[0] for k, v in ab.SPACE.items()}, "cache_modifier": ".cg"}
        with tempfile.TemporaryDirectory() as tmp:
            results = []
            for key, us in zip(keys, (14.0, 40.0)):
                fields = {k: int(v) if v.isdigit() else v for k, v in (kv.split("=") for kv in key.split(","))}
                results.append({"problem": {"family": "gemm_a8w8_blockscale", "key": key, "fields": fields},
                                "config": config, "stats": {"latency_median_ns": us * 1e3}})
            with open(os.path.join(tmp, "results.json"), "w") as f:
                json.dump({"benchmarking_method": "amortized", "results": results}, f)
            with open(os.path.join(tmp, "trials.csv"), "w") as f:
                f.write("id,problem,status,metrics\n")
                f.write(f'0,"{keys[0]}",ok,"{{""scaled_mm_blockwise_us"": 14.2, ""scaled_mm_tensorwise_us"": 8.7}}"\n')
                f.write(f'1,"{keys[1]}",ok,"{{""scaled_mm_tensorwise_us"": 26.4}}"\n')
            done = subprocess.run([sys.executable, "-B", os.path.join(ROOT, "bench", "triton", "a8w8_report.py"), tmp,
                                   "--markdown"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(lines[0], "| problem | triton | TFLOP/s | blockwise | per-tensor | int_mm | x blockwise | config |")
        self.assertTrue(lines[2].startswith(f"| {keys[0]} | 14.0 | 38 | 14.2 | 8.7 | - | 1.01 | BLOCK_SIZE_M=64 "), lines[2])
        self.assertIn("cache_modifier='.cg'", lines[2])
        self.assertTrue(lines[3].startswith(f"| {keys[1]} | 40.0 | 859 | - | 26.4 | - | - |"), lines[3])


def stand_in(tmp, properties, flags=(), fake_gpu=False):
    """A command serving the worker's family on a device with `properties`; with fake_gpu its GPU parts
    (inputs, reference, build, timer) are plain Python that runs anywhere, timing each config by its tile."""
    device = {"backend": "triton", "name": "NVIDIA H100 80GB HBM3", "properties": properties}
    fake = ("import time\nf.inputs = lambda problem, seed: None\nf.reference = lambda problem, x: [0.0]\n"
            "f.compare = None\nf.metrics = None\nf.timer = w.kw.wall_timer\n"
            "f.build = lambda c, p, x: (lambda: (time.sleep(1e-6 * (c['BLOCK_SIZE_M'] + c['NUM_KSPLIT'])), [0.0])[1])\n"
            if fake_gpu else "")
    serve = write_serve(tmp, WORKER, device, fake)
    return " ".join([sys.executable, "-B", serve, *flags])


def ktune(*args):
    return subprocess.run([os.environ["KTUNE_CLI"], *args], capture_output=True, text=True, timeout=240)


@unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
class WithKtune(unittest.TestCase):
    def test_ktune_reads_the_hello_and_prunes_as_the_worker_does(self):
        flags = ["--num-warps", "4", "--num-stages", "1,4"]
        _, space = ab.parse_args(flags)
        cases = [(shape(), H100), (shape(), MI300), (shape(M=16, K=384, q_dtype="int8"), SMALL),
                 (shape(M=1024, N=7168, K=2048), MI300)]
        for problem, props in cases:
            with self.subTest(problem=problem, properties=props), tempfile.TemporaryDirectory() as tmp:
                run = ktune("tune", "--worker", stand_in(tmp, props, flags), "--dry-run", "--output-dir", tmp,
                            "--shape", shape_arg(problem))
                self.assertEqual(run.returncode, 0, run.stderr + run.stdout)
                self.assertEqual([int(n) for n in re.findall(r"(\d+) after pruning", run.stdout)],
                                 [len(ab.configs(space, problem, props))], run.stdout)
                self.assertIn("gemm_a8w8_blockscale on NVIDIA H100 80GB HBM3 (triton)", run.stdout)

    def test_a_k_that_is_no_multiple_of_128_is_refused_before_anything_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = ktune("tune", "--worker", stand_in(tmp, H100), "--dry-run", "--output-dir", tmp,
                        "--shape", shape_arg(shape(K=4100)))
        self.assertEqual(run.returncode, 2, run.stdout)
        self.assertIn(ab.SHAPE_RULES[0]["description"], run.stderr)

    def test_a_runs_winners_export_as_the_configs_aiters_loader_picks(self):
        ms = (16, 128, 1024)
        with tempfile.TemporaryDirectory() as tmp:
            worker = stand_in(tmp, H100, ["--num-warps", "4", "--num-stages", "2", "--cache-modifier", ",.cg"],
                              fake_gpu=True)
            tuned = ktune("tune", "--worker", worker, "--strategy", "random", "--budget", "8", "--output-dir", tmp,
                          "--run-name", "a8w8", "--shape", f"M={','.join(map(str, ms))} N=512 K=512 q_dtype=fp8_e4m3")
            self.assertEqual(tuned.returncode, 0, tuned.stderr + tuned.stdout)
            run, registry, out = (os.path.join(tmp, d) for d in ("a8w8", "reg", "aiter"))
            applied = ktune("apply", run, "--registry", registry, "--accept-flagged")
            self.assertEqual(applied.returncode, 0, applied.stderr + applied.stdout)
            exported = ktune("registry", "export", "--format", "aiter", "--family-from", run, "--registry", registry,
                             "--arch", "gfx942", "-o", out)
            self.assertEqual(exported.returncode, 0, exported.stderr + exported.stdout)
            self.assertEqual(sorted(os.listdir(out)), ["gfx942-GEMM-A8W8_BLOCKSCALE-N=512-K=512.json",
                                                       "gfx942-GEMM-A8W8_BLOCKSCALE.json"])
            with open(os.path.join(run, "results.json")) as f:
                winners = {r["problem"]["fields"]["M"]: r["config"] for r in json.load(f)["results"]}
            self.assertEqual(sorted(winners), list(ms))
            for m in ms:
                config, tuned_file = aiter_get_config(out, "gfx942", "GEMM-A8W8_BLOCKSCALE", m, 512, 512)
                self.assertTrue(tuned_file)
                self.assertEqual(config, winners[m], m)
                self.assertEqual(sorted(config), sorted(ab.SPACE))  # aiter's names: its kernel takes them as they are
            self.assertEqual(aiter_get_config(out, "gfx942", "GEMM-A8W8_BLOCKSCALE", 100, 512, 512)[0], winners[128])


def aiter_get_config(configs, arch, name, m, n, k):
    """aiter's get_gemm_config on the flat layout (aiter/ops/triton/utils/gemm_config_utils.py), as
    tests/core/test_registry_format_aiter.cpp re-implements it: the default file must exist, the (N, K)
    file replaces it; M_LEQ_b ascending, then M_GEQ_b descending, then "any". -> (config, from the N-K file)."""
    bounds = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
    default, nk = (os.path.join(configs, f"{arch}-{name}{tail}.json") for tail in ("", f"-N={n}-K={k}"))
    if not os.path.exists(default):
        raise FileNotFoundError(f"Required config file doesn't exist: {default}")
    with open(nk if os.path.exists(nk) else default) as f:
        d = json.load(f)
    for b in bounds:
        if m <= b and f"M_LEQ_{b}" in d:
            return d[f"M_LEQ_{b}"], os.path.exists(nk)
    for b in reversed(bounds):
        if m >= b and f"M_GEQ_{b}" in d:
            return d[f"M_GEQ_{b}"], os.path.exists(nk)
    return d["any"], False


# The CPU family's quantize_random (core/backends/cpu/src/a8w8_workload.cpp) for A [5, 384] (seed 3) and
# B [130, 384] (seed 3 ^ 0x9e3779b97f4a7c15), printed by a one-off C++ program linked with the CPU
# backend: sum of code * (i % 251 + 1) over the bytes, the first six bytes, the first three scales.
CPP_PINS = {
    ("int8", "a"): (29633529, [189, 254, 192, 20, 217, 70], [0.0009203528170473874, 0.0025097874458879232,
                                                            0.013832326978445053]),
    ("int8", "b"): (804083556, [35, 18, 22, 168, 180, 162], [0.030766652897000313, 0.004613402299582958,
                                                             0.08696713298559189]),
    ("fp8_e4m3", "a"): (41607666, [247, 209, 246, 105, 241, 119], [0.00026090358733199537, 0.0007114799809642136,
                                                                   0.003921217750757933]),
    ("fp8_e4m3", "b"): (1124475180, [111, 104, 105, 250, 248, 250], [0.008721796795725822, 0.0013078171759843826,
                                                                      0.02465362846851349]),
}


class TorchWorkload(unittest.TestCase):
    """The workload, the reference and the launch's torch side, on the CPU (run with --torch)."""

    def setUp(self):
        self.torch = ab.torch

    def test_the_workload_is_the_cpu_familys_byte_for_byte(self):
        for q in ("int8", "fp8_e4m3"):
            x = ab.workload(shape(M=5, N=130, K=384, q_dtype=q), seed=3, device="cpu")
            for side in ("a", "b"):
                with self.subTest(q=q, side=side):
                    codes, scales = x[side + "_bytes"].flatten().tolist(), x[side + "_scale"].flatten().tolist()
                    checksum, head, first_scales = CPP_PINS[(q, side)]
                    self.assertEqual(sum(c * (i % 251 + 1) for i, c in enumerate(codes)), checksum)
                    self.assertEqual(codes[:6], head)
                    self.assertEqual(scales[:3], first_scales)
        self.assertEqual(tuple(x["b_scale"].shape), (2, 3))  # ceil(130 / 128) x 384 / 128

    def test_draws_are_ktunes_generator(self):
        sys.path.insert(0, os.path.join(ROOT, "bench", "cuda"))
        import moe_routing  # pinned against the C++ draws (tests/python/test_moe_routing.py)
        index = self.torch.tensor([0, 1, 2, 12345, 2 ** 40 + 7])
        for seed in (0, 7, 0x9E3779B97F4A7C15, 2 ** 64 - 1):
            self.assertEqual(ab.unit_draws(seed, index).tolist(), [moe_routing.unit_draw(seed, int(i)) for i in index])

    def test_e4m3_codes_round_trip_and_ties_go_to_even(self):
        torch = self.torch
        finite = torch.tensor([c for c in range(256) if c & 0x7F != 0x7F], dtype=torch.uint8)
        self.assertTrue(torch.equal(ab.e4m3_encode(ab.e4m3_decode(finite)), finite))
        v = torch.tensor([1.0625, 1.1875, 17.0, 2.0 ** -10, 500.0, -1000.0, -0.0])
        self.assertEqual(ab.e4m3_encode(v).tolist(), [0x38, 0x3A, 0x58, 0x00, 0x7E, 0xFE, 0x80])
        self.assertTrue(ab.e4m3_decode(torch.tensor([0x7F, 0xFF], dtype=torch.uint8)).isnan().all())

    def test_the_reference_is_the_block_scaled_product(self):
        torch = self.torch
        for q in ("int8", "fp8_e4m3"):
            p = shape(M=3, N=130, K=256, q_dtype=q)
            x = ab.workload(p, seed=11, device="cpu")
            values = (lambda c: c.view(torch.int8).double()) if q == "int8" else (lambda c: ab.e4m3_decode(c).double())
            a, b = values(x["a_bytes"]), values(x["b_bytes"])
            want = torch.zeros(3, 130, dtype=torch.float64)
            for kb in range(2):
                ks = slice(kb * 128, kb * 128 + 128)
                dot = a[:, ks] @ b[:, ks].t()
                want += dot * x["a_scale"][:, kb].double()[:, None] * x["b_scale"][:, kb].double().repeat_interleave(
                    128)[:130][None, :]
            ref = ab.reference(p, x)
            with self.subTest(q=q):
                self.assertLess(((ref.double() - want).abs() / (1 + want.abs())).max().item(), 1e-5)
                _, mismatch = ab.compare(a @ b.t(), ref, ab.kw.Tolerance())  # a kernel that drops the scales
                self.assertGreater(mismatch, 0.5)

    def test_compare_counts_nan_as_a_mismatch(self):
        ref = ab.reference(shape(M=2, N=128, K=128), ab.workload(shape(M=2, N=128, K=128), 1, "cpu"))
        out = ref.clone()
        out[0, 0] = float("nan")
        err, frac = ab.compare(out, ref, ab.kw.Tolerance())
        self.assertEqual(err, float("inf"))
        self.assertAlmostEqual(frac, 1 / ref.numel())

    def test_every_split_reaches_the_reference_through_the_partials(self):
        """Launch with stand-ins for both Triton kernels that do what their docstrings say with the
        arguments, grid and meta they are given: split-K's partials and their sum must add up to the
        reference, and C is NaN until a kernel writes it. int8 only where torch has no float8_e4m3fn."""
        torch = self.torch
        saved = (ab.a8w8_blockscale_kernel, ab.splitk_reduce_kernel)
        ab.a8w8_blockscale_kernel, ab.splitk_reduce_kernel = StandIn(torch, self.gemm), StandIn(torch, self.reduce)
        qs = ["int8"] + (["fp8_e4m3"] if hasattr(torch, "float8_e4m3fn") else [])
        try:
            for q in qs:
                p = shape(M=40, N=200, K=512, q_dtype=q)
                x = ab.workload(p, seed=5, device="cpu")
                ref = ab.reference(p, x)
                for split in ab.SPACE["NUM_KSPLIT"]:
                    config = {**{k: v[0] for k, v in ab.SPACE.items()}, "NUM_KSPLIT": split, "GROUP_SIZE_M": 1}
                    with self.subTest(q=q, split=split):
                        launch = ab.build(config, p, x)
                        self.assertTrue(launch.allocate()["out"].isnan().all())
                        out = launch()
                        self.assertEqual(out.dtype, torch.bfloat16)
                        self.assertEqual(ab.compare(out, ref, ab.kw.Tolerance())[1], 0.0)
                        self.assertEqual(launch.grid, (-(-40 // config["BLOCK_SIZE_M"]) * -(-200 // config["BLOCK_SIZE_N"]),
                                                       split))
                        self.assertEqual("partial" in launch.buffers, split > 1)
        finally:
            ab.a8w8_blockscale_kernel, ab.splitk_reduce_kernel = saved

    def gemm(self, grid, a, b, c, a_scale, b_scale, M, N, K, **meta):
        """a8w8_blockscale_kernel's docstring in torch: split s of grid[1] sums its K blocks into c[s] (f32
        partials) or, unsplit, into c."""
        torch, f32 = self.torch, self.torch.float32
        kbs, split = K // 128, meta["NUM_KSPLIT"]
        assert grid[1] == split and kbs % split == 0, (grid, meta)
        av, bv = a.float(), b.float()  # int8 codes, or float8_e4m3fn ones
        for s in range(split):
            acc = torch.zeros(M, N, dtype=f32)
            for kb in range(s * kbs // split, (s + 1) * kbs // split):
                ks = slice(kb * 128, kb * 128 + 128)
                acc += (av[:, ks] @ bv[:, ks].t()) * a_scale[:, kb, None] * b_scale[:, kb].repeat_interleave(128)[:N]
            (c[s] if split > 1 else c).copy_(acc.to(c.dtype))

    def reduce(self, grid, partial, c, MN, **meta):
        c.copy_(partial.sum(0).to(c.dtype))


class StandIn:
    """A Triton kernel in torch: kernel[grid](*args, **meta) runs `fn(grid, *args, **meta)`; warmup checks
    only that it is given what a launch is."""

    def __init__(self, torch, fn):
        self.torch, self.fn = torch, fn

    def warmup(self, *args, grid, **meta):
        assert len(grid) in (1, 2) and len(args) in (3, 8), (args, grid)

    def __getitem__(self, grid):
        return lambda *args, **meta: self.fn(grid, *args, **meta)


if __name__ == "__main__":
    main(ab, (Flags, Description, Report, WithKtune), [TorchWorkload])
