#!/usr/bin/env python3
"""bench/cuda/moe_routing.py, the Python port of ktune's MoE routing that the grouped GEMM
baselines use, against values pinned by the C++ tests (tests/core/test_spec_routing.cpp): the
generator alone, and a spec's "route" argument for a key and a workload seed. The port routes
exactly what a ktune run routes, or this fails."""
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
        self.assertEqual(expert[:8], [3, 5, 6, 0, 10, 6, 3, 11])
        self.assertEqual(offsets[:5], [0, 27, 39, 71, 359])
        self.assertEqual(sorted(rows), list(range(1200)))
        self.assertTrue(all(expert[rows[s]] == e for e in range(16) for s in range(offsets[e], offsets[e + 1])))

    def test_distinct_and_refused(self):
        expert = moe_routing.generate(8, 50, 3, 1)
        self.assertTrue(all(len(set(expert[t * 3:t * 3 + 3])) == 3 for t in range(50)))
        with self.assertRaises(ValueError):
            moe_routing.generate(2, 4, 3, 1)


if __name__ == "__main__":
    unittest.main()
