#!/usr/bin/env python3
"""A python/ktune_worker worker whose space has integers, booleans and strings, for the protocol's
transcripts: x=3 fails to build (compile_error), x=2 with order "ji" is wrong (wrong_result), every
other config is valid, timed by a scripted timer (fast: x=1 with fused true is the best)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ktune_worker as kw  # noqa: E402


def build(config, problem, inputs):
    if config["x"] == 3:
        raise ValueError("x=3 does not build")
    wrong = config["x"] == 2 and config["order"] == "ji"

    def run():
        return [2.0 if wrong else 1.0]

    run.ns = 1000.0 * config["x"] + (0 if config["fused"] else 300) + (0 if config["order"] == "ij" else 100)
    return run


kw.serve(kw.Family(name="mixed", key_fields=["n", {"name": "dtype", "numeric": False, "default": "f32"}],
                   space={"x": [1, 2, 3], "fused": [True, False], "order": ["ij", "ji"]}, flops="n",
                   constraints=["x <= n"], inputs=lambda problem, seed: None,
                   reference=lambda problem, inputs: [1.0], build=build, timer=lambda run, launches: run.ns),
         backend="mixed", device={"backend": "mixed", "name": "Mixed Device", "properties": {}, "text": {}})
