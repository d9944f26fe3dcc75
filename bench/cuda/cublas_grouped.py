#!/usr/bin/env python3
"""cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx, cuBLAS 12.5 and later) as a baseline of the
CUDA grouped_gemm family, beside torch._grouped_mm and the per-expert loop (grouped_torch.py): a
pass is one call holding one GEMM per expert with rows, called through ctypes on torch's own cuBLAS
handle and current stream. cuBLAS is column-major, so each row-major product goes in as its
transpose (C^T = op(B)^T op(A)^T): group_args says which operand is A, B and C, and with which
transposes, leading dimensions and element offsets, and tests/python/test_cublas_grouped.py checks
that mapping against the passes' definitions without a GPU.

    fwd  y_e  = x_e w_e^T   (xs [R, H], w [E, I, H] -> y [R, I])
    dX   dx_e = dy_e w_e    (dys [R, I], w -> dx [R, H])
    dW   dw_e = dy_e^T x_e  (dys, xs -> dw [E, I, H])

An expert without rows is left out of the call; dW's output for it is zeroed in each run, whose
time counts it, as the kernel writes it."""
import ctypes

OP_N, OP_T = 0, 1
CUDA_R_16F, CUDA_R_16BF = 2, 14
CUBLAS_COMPUTE_32F = 68


def group_args(pass_, e, first, rows, H, I):
    """The column-major GEMM of expert e (its rows [first, first + rows) in expert order):
    {"A", "B", "C": (operand, element offset), "transa", "transb", "m", "n", "k", "lda", "ldb", "ldc"},
    operands named "xs", "dys", "w" and "out"."""
    if pass_ == "fwd":  # y_e^T [I, rows] = w_e [H, I]^T (col-major) . x_e^T [H, rows]
        return {"A": ("w", e * I * H), "B": ("xs", first * H), "C": ("out", first * I), "transa": OP_T,
                "transb": OP_N, "m": I, "n": rows, "k": H, "lda": H, "ldb": H, "ldc": I}
    if pass_ == "dX":  # dx_e^T [H, rows] = w_e^T [H, I] . dy_e^T [I, rows]
        return {"A": ("w", e * I * H), "B": ("dys", first * I), "C": ("out", first * H), "transa": OP_N,
                "transb": OP_N, "m": H, "n": rows, "k": I, "lda": H, "ldb": I, "ldc": H}
    if pass_ == "dW":  # dw_e^T [H, I] = x_e^T [H, rows] . dy_e [rows, I]
        return {"A": ("xs", first * H), "B": ("dys", first * I), "C": ("out", e * I * H), "transa": OP_N,
                "transb": OP_T, "m": H, "n": I, "k": rows, "lda": H, "ldb": I, "ldc": H}
    raise ValueError(f"unknown pass {pass_!r}: fwd, dX or dW")


def _library():
    """torch's cuBLAS (already loaded by torch: dlopen returns the same library)."""
    for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        if not hasattr(lib, "cublasGemmGroupedBatchedEx"):
            raise RuntimeError(f"{name} has no cublasGemmGroupedBatchedEx (cuBLAS 12.5 or later has it)")
        return lib
    raise RuntimeError("no libcublas.so.13 / .12 in this process's library path")


def grouped_batched(pass_, xs, w, dys, offsets):
    """(run, out): run() computes the pass into out as one cublasGemmGroupedBatchedEx call; operands
    are grouped_torch.baseline's (xs [R, H], w [E, I, H], dys [R, I] in expert order; offsets the
    experts' first rows and the end)."""
    import torch

    some = xs if xs is not None else dys
    E, I, H = w.shape if w is not None else (len(offsets) - 1, dys.shape[1], xs.shape[1])
    if pass_ == "fwd":
        out = torch.empty(xs.shape[0], I, device=some.device, dtype=some.dtype)
    elif pass_ == "dX":
        out = torch.empty(dys.shape[0], H, device=some.device, dtype=some.dtype)
    else:
        out = torch.empty(E, I, H, device=some.device, dtype=some.dtype)
    absent = [e for e in range(E) if pass_ == "dW" and offsets[e + 1] == offsets[e]]
    operands = {"xs": xs, "dys": dys, "w": w, "out": out}
    groups = [group_args(pass_, e, offsets[e], offsets[e + 1] - offsets[e], H, I)
              for e in range(E) if offsets[e + 1] > offsets[e]]
    count = len(groups)

    def pointers(side):  # a device array of the groups' device pointers to operand `side`
        return torch.tensor([operands[g[side][0]].data_ptr() + g[side][1] * some.element_size() for g in groups],
                            dtype=torch.int64, device=some.device)

    ints = lambda field: (ctypes.c_int * count)(*[g[field] for g in groups])  # noqa: E731
    host = {f: ints(f) for f in ("transa", "transb", "m", "n", "k", "lda", "ldb", "ldc")}
    ptr = {side: pointers(side) for side in ("A", "B", "C")}
    alpha, beta = (ctypes.c_float * count)(*[1.0] * count), (ctypes.c_float * count)(*[0.0] * count)
    sizes = (ctypes.c_int * count)(*[1] * count)
    dtype = CUDA_R_16BF if some.dtype == torch.bfloat16 else CUDA_R_16F
    lib = _library()
    handle = ctypes.c_void_p(torch.cuda.current_blas_handle())

    def run():
        # torch sets its handle's stream when it calls cuBLAS; a call of ours may come first on
        # this stream (a graph capture's), so set it here.
        lib.cublasSetStream_v2(handle, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        status = lib.cublasGemmGroupedBatchedEx(
            handle, host["transa"], host["transb"], host["m"], host["n"], host["k"], alpha,
            ctypes.c_void_p(ptr["A"].data_ptr()), dtype, host["lda"], ctypes.c_void_p(ptr["B"].data_ptr()), dtype,
            host["ldb"], beta, ctypes.c_void_p(ptr["C"].data_ptr()), dtype, host["ldc"], count, sizes,
            CUBLAS_COMPUTE_32F)
        if status != 0:
            raise RuntimeError(f"cublasGemmGroupedBatchedEx returned status {status} ({pass_})")
        for e in absent:
            out[e].zero_()

    return run, out
