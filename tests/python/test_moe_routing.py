#!/usr/bin/env python3
"""bench/cuda/moe_routing.py, the Python port of ktune's MoE routing that the grouped GEMM
baselines use, against values pinned by the C++ tests (tests/core/test_spec_routing.cpp): the
generator alone, and a spec's "route" argument for its counts and a workload seed, which every
pass of the shape shares. The port routes exactly what a ktune run routes, or this fails."""
import os
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "bench", "cuda"))
import moe_routing  # noqa: E402


class MoeRoutingTest(unittest.TestCase):
    def test_generator_matches_the_core(self):
        self.assertEqual(moe_routing.generate(16, 100, 2, 9)[:8], [10, 1, 7, 4, 1, 7, 1, 5])

    def test_spec_route_matches_a_run(self):
        expert, offsets, rows = moe_routing.routing({"experts": 16, "tokens": 300, "topk": 4, "hidden": 8}, 5)
        self.assertEqual(expert[:8], [12, 9, 10, 7, 11, 12, 9, 2])
        self.assertEqual(offsets[:5], [0, 21, 90, 121, 132])
        self.assertEqual(sorted(rows), list(range(1200)))
        self.assertTrue(all(expert[rows[s]] == e for e in range(16) for s in range(offsets[e], offsets[e + 1])))

    def test_the_seed_is_the_cores(self):
        self.assertEqual(moe_routing.moe_routing_seed(5, 16, 300, 4), 961920147714475502)

    def test_only_the_seed_and_the_counts_route(self):
        fields = {"experts": 8, "tokens": 16, "topk": 2, "hidden": 4096, "intermediate": 14336, "dtype": "bf16"}
        fwd = moe_routing.routing({**fields, "pass": "fwd"}, 0)
        self.assertEqual(moe_routing.routing({**fields, "pass": "dX"}, 0), fwd)
        self.assertEqual(moe_routing.routing({**fields, "pass": "dW", "hidden": 2048, "dtype": "f16"}, 0), fwd)
        self.assertNotEqual(moe_routing.routing({**fields, "pass": "fwd"}, 1), fwd)
        for count in ("experts", "tokens", "topk"):
            self.assertNotEqual(moe_routing.routing({**fields, count: fields[count] + 1}, 0)[0][:32], fwd[0])

    def test_distinct_and_refused(self):
        expert = moe_routing.generate(8, 50, 3, 1)
        self.assertTrue(all(len(set(expert[t * 3:t * 3 + 3])) == 3 for t in range(50)))
        with self.assertRaises(ValueError):
            moe_routing.generate(2, 4, 3, 1)


if __name__ == "__main__":
    unittest.main()
