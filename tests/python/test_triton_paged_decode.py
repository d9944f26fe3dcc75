#!/usr/bin/env python3
"""examples/workers/triton_paged_decode.py without a GPU: it imports without torch and triton; its
flags narrow the space and name what they refuse; the family it describes in its hello has the
CUDA spec's key fields, costs, heads split and shape rules, and ktune prunes its space as the
worker's own reading of the constraints does (through `ktune tune --dry-run`, KTUNE_CLI), tunes the
local heads under --tp-size and refuses a shape the spec's rules refuse; its lengths are ragged with one at
max_model_len and its page table a shuffled pool of exactly the pages used.

    test_triton_paged_decode.py          the parts that need only Python (and ktune)
    test_triton_paged_decode.py --torch  the workload and reference in torch on the CPU: exits 77
                                         (ctest: skipped) with the reason where torch is missing
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # importing the helper leaves no __pycache__ in the source tree
from worker_tests import (ROOT, assert_says_what_is_missing, load_worker, main, refused, worker_path,  # noqa: E402
                          write_serve)

WORKER = worker_path("triton_paged_decode")
SPEC = os.path.join(ROOT, "resources", "kernels", "cuda", "paged_attention.json")
pd = load_worker("triton_paged_decode")


def shape(**fields):
    base = dict(num_sequences=16, num_q_heads=32, num_kv_heads=8, head_dim=128, page_size=16, max_model_len=4096,
                min_len=1)
    return {**base, **fields}


class Flags(unittest.TestCase):
    def test_no_flags_is_the_whole_space(self):
        args, space = pd.parse_args([])
        self.assertEqual(space, pd.SPACE)
        self.assertEqual(args.device, 0)

    def test_flags_narrow_their_parameter_in_the_given_order(self):
        args, space = pd.parse_args(["--kv-block-sizes", "4,2", "--q-block-sizes", "1", "--kv-splits", "8",
                                     "--dot", "0", "--device", "3"])
        self.assertEqual(space["kv_pages_per_block"], [4, 2])
        self.assertEqual(space["q_heads_per_block"], [1])
        self.assertEqual(space["kv_splits"], [8])
        self.assertEqual(space["dot"], [0])
        self.assertEqual(space["num_warps"], pd.SPACE["num_warps"])
        self.assertEqual(args.device, 3)

    def refused(self, argv):
        return refused(self, pd.parse_args, argv)

    def test_a_value_that_is_no_candidate_is_refused_naming_the_flag_and_the_candidates(self):
        msg = self.refused(["--kv-block-sizes", "1,3"])
        self.assertIn("--kv-block-sizes '1,3': [3] not among kv_pages_per_block's candidates [1, 2, 4, 8, 16]", msg)

    def test_a_list_that_is_not_numbers_is_refused(self):
        self.assertIn("--num-warps 'four': expected comma-separated whole numbers", self.refused(["--num-warps", "four"]))

    def test_an_unknown_flag_is_refused(self):
        self.assertIn("unrecognized arguments: --block-n", self.refused(["--block-n", "64"]))


class Description(unittest.TestCase):
    def test_the_family_is_the_cuda_specs_key_fields_and_costs(self):
        with open(SPEC) as f:
            spec = json.load(f)
        d = pd.family(pd.SPACE).to_json()
        self.assertEqual(d["name"], "paged_attention")
        want = [{"name": k["name"], "numeric": k.get("numeric", True), "default": k.get("default", ""),
                 "choices": k.get("choices", []), "help": k["help"]} for k in spec["key_fields"]]
        self.assertEqual(d["key_fields"], want)
        self.assertEqual([k["name"] for k in d["key_fields"]],
                         ["num_sequences", "num_q_heads", "num_kv_heads", "head_dim", "page_size", "max_model_len",
                          "min_len", "dtype"])
        for field in ("flops", "bytes", "bucket_field", "tp_head_fields", "shape_rules"):
            self.assertEqual(d[field], spec[field], field)
        self.assertEqual([p["name"] for p in d["space"]["parameters"]], list(pd.SPACE))
        self.assertEqual(d["default_config"], {k: v[0] for k, v in pd.SPACE.items()})

    def test_configs_follow_the_gqa_group_block_and_split_rules(self):
        group4 = pd.configs(pd.SPACE, shape())
        self.assertEqual({c["q_heads_per_block"] for c in group4}, {1, 2, 4})
        self.assertTrue(all(c["dot"] or c["q_heads_per_block"] == 1 for c in group4))
        page64 = pd.configs(pd.SPACE, shape(page_size=64))
        self.assertEqual({c["kv_pages_per_block"] for c in page64}, {1, 2, 4})  # 64 to 256 tokens a block
        short = pd.configs(pd.SPACE, shape(max_model_len=64))
        self.assertEqual({(c["kv_splits"], c["kv_pages_per_block"]) for c in short if c["kv_splits"] > 1},
                         {(2, 1), (2, 2), (4, 1)})
        self.assertEqual({c["q_heads_per_block"] for c in pd.configs(pd.SPACE, shape(num_kv_heads=32))}, {1})

    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_ktune_reads_the_hello_and_prunes_as_the_worker_does(self):
        shapes = [shape(), shape(page_size=64), shape(max_model_len=64, page_size=8),
                  shape(num_q_heads=8, num_kv_heads=8, head_dim=64), shape(num_q_heads=64, num_kv_heads=4)]
        with tempfile.TemporaryDirectory() as tmp:
            serve = write_serve(tmp, WORKER)
            cmd = [os.environ["KTUNE_CLI"], "tune", "--worker", f"{sys.executable} -B {serve} --kv-splits 1,2,4",
                   "--dry-run", "--output-dir", tmp]
            for s in shapes:
                cmd += ["--shape", " ".join(f"{k}={v}" for k, v in s.items())]
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                                 env={**os.environ, "KTUNE_DEVICE_NAME": "test"})
        self.assertEqual(run.returncode, 0, run.stderr + run.stdout)
        counts = [int(n) for n in re.findall(r"(\d+) after pruning", run.stdout)]
        space = dict(pd.SPACE, kv_splits=[1, 2, 4])
        self.assertEqual(counts, [len(pd.configs(space, s)) for s in shapes], run.stdout)
        self.assertIn("paged_attention on test (triton)", run.stdout)

    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_tp_size_tunes_the_local_heads_and_the_specs_rules_refuse_bad_shapes(self):
        with tempfile.TemporaryDirectory() as tmp:
            serve = write_serve(tmp, WORKER)

            def dry_run(s, *more):
                return subprocess.run([os.environ["KTUNE_CLI"], "tune", "--worker", f"{sys.executable} -B {serve}",
                                       "--dry-run", "--output-dir", tmp, "--shape",
                                       " ".join(f"{k}={v}" for k, v in s.items()), *more],
                                      capture_output=True, text=True, timeout=120,
                                      env={**os.environ, "KTUNE_DEVICE_NAME": "test"})
            split = dry_run(shape(), "--tp-size", "4")
            self.assertEqual(split.returncode, 0, split.stderr + split.stdout)
            local = shape(num_q_heads=8, num_kv_heads=2)
            self.assertIn("num_q_heads=8,num_kv_heads=2,", split.stdout)
            self.assertIn("tp=4/heads: ", split.stdout)
            self.assertEqual([int(n) for n in re.findall(r"(\d+) after pruning", split.stdout)],
                             [len(pd.configs(pd.SPACE, local))])
            with open(SPEC) as f:
                rules = json.load(f)["shape_rules"]
            for bad, rule in ((shape(num_kv_heads=6), rules[0]), (shape(head_dim=96), rules[1])):
                run = dry_run(bad)
                self.assertEqual(run.returncode, 2, run.stdout)
                self.assertIn(rule["description"] + " (" + rule["expr"] + ")", run.stderr)

    @unittest.skipIf(pd.torch is not None and pd.triton is not None, "torch and triton are here: the worker serves")
    def test_without_torch_or_triton_the_worker_says_what_is_missing(self):
        assert_says_what_is_missing(self, WORKER, 'a CUDA GPU')


class Workload(unittest.TestCase):
    def test_ragged_lengths_lie_in_range_with_one_at_max_and_follow_the_seed(self):
        p = shape(num_sequences=35, max_model_len=8192)
        lens = pd.lengths(p, seed=0)
        self.assertEqual(len(lens), 35)
        self.assertTrue(all(1 <= n <= 8192 for n in lens))
        self.assertEqual(lens.count(8192), 1)
        self.assertGreater(len(set(lens)), 30)
        self.assertEqual(pd.lengths(p, seed=0), lens)
        self.assertNotEqual(pd.lengths(p, seed=1), lens)

    def test_min_len_at_max_model_len_is_every_sequence_at_full_context(self):
        self.assertEqual(pd.lengths(shape(num_sequences=4, min_len=4096), seed=5), [4096] * 4)

    def test_lengths_start_at_min_len(self):
        lens = pd.lengths(shape(num_sequences=50, min_len=3000), seed=2)
        self.assertTrue(all(3000 <= n <= 4096 for n in lens))

    def test_the_table_is_a_shuffled_pool_of_exactly_the_pages_used(self):
        lens = [1, 16, 17, 100, 4096, 33]
        rows, pages = pd.page_table(lens, 16, 256, seed=0)
        used = [math.ceil(n / 16) for n in lens]
        self.assertEqual(pages, sum(used))
        self.assertEqual([len(r) for r in rows], [256] * len(lens))
        flat = [p for r, u in zip(rows, used) for p in r[:u]]
        self.assertEqual(sorted(flat), list(range(pages)))  # each page of the pool once
        self.assertTrue(all(p == 0 for r, u in zip(rows, used) for p in r[u:]))
        self.assertNotEqual(flat, sorted(flat))  # shuffled: a kernel that ignored the table would read other pages
        in_order = sum(1 for a, b in zip(flat, flat[1:]) if b == a + 1)
        self.assertLess(in_order, pages // 10)
        self.assertNotEqual(pd.page_table(lens, 16, 256, seed=1)[0], rows)


class TorchWorkload(unittest.TestCase):
    """The workload and reference in torch, on the CPU (run with --torch)."""

    p = dict(num_sequences=5, num_q_heads=8, num_kv_heads=2, head_dim=32, page_size=4, max_model_len=37, min_len=1,
             dtype="bf16")

    def setUp(self):
        self.torch = pd.torch
        self.x = pd.workload(self.p, seed=3, device="cpu")

    def brute_force(self, x, lengths, table):
        """Token by token through the table, in f64: no gathering of pages, no batching."""
        torch = self.torch
        q, k, v = x["q"].double(), x["k"].double(), x["v"].double()
        group, page = self.p["num_q_heads"] // self.p["num_kv_heads"], self.p["page_size"]
        out = torch.zeros(q.shape, dtype=torch.float64)
        for b, n in enumerate(lengths):
            for h in range(self.p["num_q_heads"]):
                rows = [(int(table[b][t // page]), h // group, t % page) for t in range(n)]
                s = torch.stack([q[b, h] @ k[r] for r in rows]) / math.sqrt(self.p["head_dim"])
                w = torch.softmax(s, 0)
                out[b, h] = sum(w[i] * v[r] for i, r in enumerate(rows))
        return out

    def test_the_tensors_are_the_problem_and_the_pool_is_the_pages_used(self):
        x, p = self.x, self.p
        lens = x["lengths"].tolist()
        self.assertEqual(lens, pd.lengths(p, 3))
        pages = sum(math.ceil(n / 4) for n in lens)
        self.assertEqual(tuple(x["k"].shape), (pages, 2, 4, 32))
        self.assertEqual(tuple(x["v"].shape), (pages, 2, 4, 32))
        self.assertEqual(tuple(x["q"].shape), (5, 8, 32))
        self.assertEqual(tuple(x["table"].shape), (5, 10))
        self.assertEqual((x["q"].dtype, x["table"].dtype), (self.torch.bfloat16, self.torch.int32))
        self.assertLessEqual(x["q"].abs().max().item(), pd.Q_RANGE)
        self.assertGreater(x["q"].abs().max().item(), pd.Q_RANGE / 2)
        self.assertTrue(self.torch.equal(pd.workload(p, seed=3, device="cpu")["k"], x["k"]))

    def test_the_reference_is_attention_over_each_sequences_own_pages(self):
        ref = pd.reference(self.p, self.x)
        want = self.brute_force(self.x, self.x["lengths"].tolist(), self.x["table"].tolist())
        self.assertLess((ref.double() - want).abs().max().item(), 1e-4)

    def test_a_kernel_ignoring_the_table_or_the_lengths_would_fail_the_check(self):
        ref = pd.reference(self.p, self.x)
        lens = self.x["lengths"].tolist()
        used = [math.ceil(n / 4) for n in lens]
        unshuffled = [list(range(sum(used[:b]), sum(used[:b + 1]))) + [0] * (10 - used[b]) for b in range(5)]
        for what, lengths, table in (("the unshuffled table", lens, unshuffled),
                                     ("full lengths", [37] * 5, self.x["table"].tolist())):
            wrong = self.torch.tensor(self.brute_force(self.x, lengths, table), dtype=self.torch.float32)
            _, mismatch = pd.compare(wrong, ref, pd.TOLERANCE)
            self.assertGreater(mismatch, 0.5, what)

    def test_compare_counts_nan_as_a_mismatch(self):
        ref = pd.reference(self.p, self.x)
        self.assertEqual(pd.compare(ref.clone(), ref, pd.TOLERANCE), (0.0, 0.0))
        out = ref.clone()
        out[0, 0, 0] = float("nan")
        err, frac = pd.compare(out, ref, pd.TOLERANCE)
        self.assertEqual(err, float("inf"))
        self.assertAlmostEqual(frac, 1 / ref.numel())


if __name__ == "__main__":
    main(pd, (Flags, Description, Workload), [TorchWorkload])
