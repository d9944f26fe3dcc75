#!/usr/bin/env python3
"""A ktune worker for a blocked numpy matmul: C = A @ B, tiled by `block` in `order`.

    ktune tune --worker "python3 examples/workers/numpy_matmul.py" --shape "M=256 N=256 K=256"

With KTUNE_DEMO_FAULTS=1 the space gains an `inject` parameter whose values make one config
raise while building, one return a wrong result, one kill the worker with SIGSEGV and one hang:
ktune records them as compile_error, wrong_result, crashed and timeout, and the run goes on.
"""
import ctypes
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ktune_worker as kw  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64}
FAULTS = os.environ.get("KTUNE_DEMO_FAULTS") == "1"


def inputs(problem, seed):
    rng = np.random.default_rng(seed)
    dt = DTYPES[problem["dtype"]]
    return {"a": rng.standard_normal((problem["M"], problem["K"])).astype(dt),
            "b": rng.standard_normal((problem["K"], problem["N"])).astype(dt)}


def build(config, problem, x):
    a, b, bs = x["a"], x["b"], config["block"]
    c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    inject = config.get("inject", "none")
    if inject == "raise":
        raise ValueError(f"block {bs} cannot be built (injected)")

    def run():
        if inject == "segfault":
            # A real fault, in this thread, as a kernel's would be. os.kill(os.getpid(), SIGSEGV) is
            # aimed at the process: another thread may take it, and while faulthandler dumps the
            # stacks there, this one returned and answered "ok" (seen once in CI, under load).
            ctypes.string_at(0)
        while inject == "hang":
            time.sleep(1)
        rows, cols = range(0, c.shape[0], bs), range(0, c.shape[1], bs)
        tiles = [(i, j) for i in rows for j in cols] if config["order"] == "row" else [(i, j) for j in cols for i in rows]
        for i, j in tiles:
            np.matmul(a[i:i + bs], b[:, j:j + bs], out=c[i:i + bs, j:j + bs])
        return c + 1 if inject == "wrong" else c
    return run


space = {"block": [32, 64, 128, 256], "order": ["row", "col"]}
constraints = ["block <= M || block <= N"]
if FAULTS:
    space["inject"] = ["none", "raise", "wrong", "segfault", "hang"]
    constraints.append("inject == 'none' || block == 64")  # one faulty config of each kind per order

kw.serve(kw.Family(
    name="numpy_matmul", description="blocked numpy matmul (example worker)",
    key_fields=["M", "N", "K", {"name": "dtype", "numeric": False, "default": "f32", "choices": list(DTYPES)}],
    bucket_field="M", flops="2*M*N*K", bytes="4*(M*K+K*N+M*N)",
    space=space, constraints=constraints, inputs=inputs,
    reference=lambda problem, x: x["a"].astype(np.float64) @ x["b"].astype(np.float64),
    build=build, tolerance=kw.Tolerance(atol=1e-3, rtol=1e-3)), backend="numpy")
