#!/usr/bin/env python3
"""A ktune_worker kernel (standard library only) whose timer misreads some configs: x=2 reads NaN ns,
x=3 reads -5 ns; every other x reads 1000+x ns. ktune_worker must report those measurements as failed
itself, and never write NaN (which json.dumps would, and which is not JSON)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ktune_worker as kw  # noqa: E402


class Kernel:
    def __init__(self, x):
        self.x = x

    def __call__(self):
        return [1.0, 2.0]


def timer(kernel, launches):
    for _ in range(launches):
        kernel()
    return {2: float("nan"), 3: -5.0}.get(kernel.x, 1000.0 + kernel.x)


kw.serve(kw.Family(name="timed", key_fields=["n"], space={"x": [1, 2, 3, 4]}, flops="n",
                   inputs=lambda problem, seed: None, reference=lambda problem, inputs: [1.0, 2.0],
                   build=lambda config, problem, inputs: Kernel(config["x"]), timer=timer),
         backend="bad_timer")
