#!/usr/bin/env python3
"""A ktune worker for the MoE grouped GEMM in Triton: the `grouped_gemm` family of
resources/kernels/cuda/grouped_gemm.json (its key fields, passes, routing and tensors), tuned over
Unsloth's parameters (BLOCK_SIZE_M/N/K, num_warps, num_stages, permute_x, permute_y,
use_tma_load_x / use_tma_load_w / use_tma_load_dy, use_tma_store) with Unsloth's rules as constraints.

    ktune tune --worker "python3 examples/workers/triton_grouped_gemm.py" --strategy random --time-budget 60s \\
      --shape "experts=8 tokens=4096 topk=2 hidden=4096 intermediate=14336 pass=fwd,dX,dW"
    python3 bench/triton/grouped_top.py tuning_runs/<run> --top 10     # Unsloth's table, per problem

The problem (the native family's): x [tokens, hidden], w [experts, intermediate, hidden], dy [R,
intermediate] with R = tokens * topk routed rows, row r = t * topk + j being token t's j-th expert.
pass=fwd: y[r] = x[t] w_e^T; dX: dx[r] = dy[r] w_e; dW: dw_e = sum over e's rows of dy[r]^T x[t]
(an expert nobody chose gets zeros). The routing is ktune's (bench/cuda/moe_routing.py: topk
distinct experts a token, 1/rank^1.5 popularity, so hot and empty experts), drawn from the workload
seed, experts, tokens and topk exactly as the CUDA spec's "route" argument and the CPU family draw
it, so the three passes of a shape share one routing, as a MoE layer's do; x, w and dy are
uniform in [-1, 1] from a torch generator seeded with the workload seed. Each config is validated
against per-expert torch.mm in f32 with the run's tolerance (--atol, --rtol, --max-mismatch).

The kernels: a persistent grid of one program per SM; the programs take the experts' output tiles
in turn (tile index += programs), M fastest so that programs running together share a tile of w,
as Unsloth's kernels do. fwd / dX: BLOCK_SIZE_M rows of one expert x BLOCK_SIZE_N columns
(intermediate / hidden), K (hidden / intermediate) in BLOCK_SIZE_K steps; dW: BLOCK_SIZE_M of
intermediate x BLOCK_SIZE_N of hidden, K walking the expert's rows. The parameters mean what the
native family's do. permute_x fuses the x side: fwd and dW gather x rows by token in the loads, dX
scatters dx rows to routed order in its stores; permute_y the y side: fwd scatters y rows, dX and
dW gather dy rows. An unfused side is a torch launch of its own through an expert-order buffer
(index_select before, index_copy_ after), timed with the kernel. use_tma_load_* / use_tma_store
move a tile by a tensor descriptor (tl.make_tensor_descriptor, TMA) instead of pointer loads and
stores: a box reads and writes rows in expert order, so Unsloth's rules hold (no TMA load of a
side the kernel gathers, no TMA store where it scatters, never permute_x with permute_y), and a
TMA store is bounded at its expert's last row. Assumed: Triton 3.4 or newer for the descriptors
(tl.make_tensor_descriptor, triton.set_allocator for their scratch); the hello's device property
`tma` is 1 only where Triton has them and the GPU is a Hopper or newer, and TMA configs are
pruned elsewhere.

Timing: each sample replays a CUDA graph of the launch(es) (triton_common.GraphTimer): one launch
is cold (an L2 flush first), amortized samples back to back are warm. Each trial also records
`speedup_vs_torch`, torch's time over the config's median, and `torch_us`: torch's time is the
faster of torch._grouped_mm and a loop of per-expert torch.mm (bench/cuda/grouped_torch.py, on
expert-ordered operands: their permutations are not timed), timed once per problem in this
process the way ktune times the configs (the same graphs; per_launch: single cold launches; amortized:
launches lasting --min-sample-ms; the median of --min-samples samples, 5 at least), and
`torch_grouped_mm_us`, `torch_mm_loop_us` for each.

Flags narrow the space: --block-size-m, --block-size-n, --block-size-k, --num-warps, --num-stages
(comma-separated numbers), --permute-x, --permute-y, --use-tma-load-x, --use-tma-load-w,
--use-tma-load-dy, --use-tma-store (0, 1 or 0,1).
"""
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPEC = os.path.join(ROOT, "resources", "kernels", "cuda", "grouped_gemm.json")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "cuda"))
sys.path.insert(0, HERE)
import ktune_worker as kw  # noqa: E402
import moe_routing  # noqa: E402
from triton_common import GraphTimer, compare  # noqa: E402
import triton_common  # noqa: E402

# torch, triton and tl are None where not importable: the GPU parts need them; the rest
# (flags, the family, the routing) is plain Python.
from triton_common import tl, torch, triton  # noqa: E402

# Candidates of each parameter, in the order ktune measures them (the first is the default).
SPACE = {
    "BLOCK_SIZE_M": [64, 16, 32, 128],  # fwd, dX: an expert's rows; dW: intermediate
    "BLOCK_SIZE_N": [128, 32, 64, 256],  # fwd: intermediate; dX, dW: hidden
    "BLOCK_SIZE_K": [64, 32, 128, 256],  # fwd: hidden; dX: intermediate; dW: an expert's rows
    "num_warps": [4, 8],
    "num_stages": [3, 2, 4, 5],
    "permute_x": [True, False],
    "permute_y": [False, True],
    "use_tma_load_x": [False, True],
    "use_tma_load_w": [False, True],
    "use_tma_load_dy": [False, True],
    "use_tma_store": [False, True],
}
TMA_FLAGS = ("use_tma_load_x", "use_tma_load_w", "use_tma_load_dy", "use_tma_store")
CONSTRAINTS = [
    {"expr": "!(permute_x && permute_y)",
     "description": "Unsloth's rule in every pass: fuse the x-side or the y-side permutation, never both"},
    {"expr": "!use_tma_load_x || (pass != \"dX\" && !permute_x)",
     "description": "x is TMA-loaded only where the pass reads it (fwd, dW) in expert order: a box cannot gather "
                    "rows by token (Unsloth: no TMA load of x with permute_x before Blackwell)"},
    {"expr": "!use_tma_load_dy || (pass != \"fwd\" && !permute_y)",
     "description": "dy is TMA-loaded only where the pass reads it (dX, dW) in expert order: not where permute_y "
                    "gathers it"},
    {"expr": "!use_tma_load_w || pass != \"dW\"", "description": "dW reads no weights"},
    {"expr": "!use_tma_store || !((pass == \"fwd\" && permute_y) || (pass == \"dX\" && permute_x))",
     "description": "a TMA store writes whole boxes in expert order: not where permute_y scatters y (fwd) or "
                    "permute_x scatters dx (dX)"},
    {"expr": "tma == 1 || !(use_tma_load_x || use_tma_load_w || use_tma_load_dy || use_tma_store)",
     "description": "TMA needs a Hopper or newer GPU and a Triton with tl.make_tensor_descriptor (device property tma)"},
    {"expr": "(num_stages*BLOCK_SIZE_K*(BLOCK_SIZE_M + BLOCK_SIZE_N) + BLOCK_SIZE_M*BLOCK_SIZE_N)*2 <= "
             "smem_per_block + 50000",
     "description": "Unsloth's estimate of the shared memory (stages of A and B tiles, the output tile) and its "
                    "slack: Triton shares buffers the estimate counts twice"},
    {"expr": "BLOCK_SIZE_M*BLOCK_SIZE_N <= 4096*num_warps",
     "description": "a thread's f32 accumulators (at most 128) stay in registers"},
]
FLAGS = {"--" + name.lower().replace("_", "-"): name for name in SPACE}  # --block-size-m, --use-tma-store, ...
BASELINE_SAMPLES = 5  # torch's time: the median of this many samples at least (of --min-samples if more)


def parse_args(argv):
    """The worker's flags: each narrows one parameter to the listed values (which must be candidates).
    `--device I` is the one ktune appends with --devices."""
    return triton_common.parse_space("triton_grouped_gemm.py", __doc__, argv, SPACE, FLAGS, _values)


def _values(parser, flag, param, given):
    """A flag's comma-separated values (numbers, or 0/1 for booleans)."""
    boolean = isinstance(SPACE[param][0], bool)
    words = {"0": False, "1": True, "false": False, "true": True}
    try:
        return [words[v.lower()] if boolean else int(v) for v in given.split(",")]
    except (KeyError, ValueError):
        what = "0 or 1 (true or false)" if boolean else "whole numbers"
        parser.error(f"{flag} {given!r}: expected comma-separated {what}, e.g. {flag} {'0' if boolean else '64,128'}")


def spec_family():
    """What the native family declares that this worker shares (triton_common.spec_family): SHARDING
    divides intermediate or hidden."""
    return triton_common.spec_family(SPEC)


SHARDING = triton_common.SHARDING


# --- the workload: the routing in plain Python, tensors in torch --------------------------------

def routing(problem, seed):
    """(expert of each routed row, offsets (experts + 1), routed rows in expert order), as the CUDA spec
    routes `problem` for the workload `seed`."""
    return moe_routing.routing(problem, seed)


def workload(problem, seed, device="cuda"):
    """The routing (expert: each routed row's; the expert order as int32 offsets, rows and toks = rows //
    topk; rows_long for index_copy_) and the operands the pass reads, uniform in [-1, 1]: x [tokens,
    hidden] (fwd, dW), w [experts, intermediate, hidden] (fwd, dX), dy [R, intermediate] (dX, dW)."""
    p = problem
    experts, tokens, topk, hidden, inter = (p[k] for k in ("experts", "tokens", "topk", "hidden", "intermediate"))
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[p.get("dtype", "bf16")]
    expert, offsets, rows = routing(p, seed)
    rows_long = torch.tensor(rows, dtype=torch.int64, device=device)
    x = {"expert": torch.tensor(expert, dtype=torch.int64, device=device), "offsets_list": offsets,
         "offsets": torch.tensor(offsets, dtype=torch.int32, device=device), "rows_long": rows_long,
         "rows": rows_long.to(torch.int32), "toks": (rows_long // topk).to(torch.int32)}
    gen = torch.Generator(device=device).manual_seed(seed)

    def uniform(*shape):
        return torch.empty(shape, dtype=dtype, device=device).uniform_(-1, 1, generator=gen)
    if p["pass"] != "dX":
        x["x"] = uniform(tokens, hidden)
    if p["pass"] != "dW":
        x["w"] = uniform(experts, inter, hidden)
    if p["pass"] != "fwd":
        x["dy"] = uniform(tokens * topk, inter)
    return x


def reference(problem, x):
    """Per expert, torch.mm in f32 over the rows routed to it, found from each row's expert (not through
    the expert order the kernels use); dW of an expert nobody chose is zeros."""
    expert, topk, f32 = x["expert"], problem["topk"], torch.float32
    if problem["pass"] == "dW":
        shape = (problem["experts"], problem["intermediate"], problem["hidden"])
        out = torch.zeros(shape, dtype=f32, device=expert.device)
    else:
        cols = problem["intermediate"] if problem["pass"] == "fwd" else problem["hidden"]
        out = torch.full((expert.numel(), cols), float("nan"), dtype=f32, device=expert.device)
    for e in range(problem["experts"]):
        r = (expert == e).nonzero().squeeze(1)
        if r.numel() == 0:
            continue
        if problem["pass"] == "fwd":
            out[r] = x["x"][r // topk].to(f32) @ x["w"][e].to(f32).t()
        elif problem["pass"] == "dX":
            out[r] = x["dy"][r].to(f32) @ x["w"][e].to(f32)
        else:
            out[e] = x["dy"][r].to(f32).t() @ x["x"][r // topk].to(f32)
    return out


# --- the kernels ---------------------------------------------------------------------------------

if triton is not None:
    @triton.jit
    def grouped_rows_kernel(a_ptr, a_index_ptr, w_ptr, out_ptr, rows_ptr, offsets_ptr, R, K, N, programs,
                            EXPERTS: tl.constexpr, GATHER_A: tl.constexpr, SCATTER_OUT: tl.constexpr,
                            W_KN: tl.constexpr, TMA_A: tl.constexpr, TMA_W: tl.constexpr, TMA_STORE: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        """fwd (W_KN=0, w_e [N, K]): out_s = a_s w_e^T; dX (W_KN=1, w_e [K, N]): out_s = a_s w_e; for each
        expert e over its expert-order positions s. a_s is a[a_index[s]] with GATHER_A, else a[s] (a in
        expert order); out_s is out[rows[s]] with SCATTER_OUT, else out[s]."""
        tl.static_assert(not (TMA_A and GATHER_A), "a TMA box cannot gather rows")
        tl.static_assert(not (TMA_STORE and SCATTER_OUT), "a TMA box cannot scatter rows")
        if TMA_A:  # a box past an expert's last row reads the next expert's: those output rows are not stored
            a_desc = tl.make_tensor_descriptor(a_ptr, shape=[R, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
        if TMA_W:
            if W_KN:
                w_desc = tl.make_tensor_descriptor(w_ptr, shape=[EXPERTS, K, N], strides=[K * N, N, 1],
                                                   block_shape=[1, BLOCK_K, BLOCK_N])
            else:
                w_desc = tl.make_tensor_descriptor(w_ptr, shape=[EXPERTS, N, K], strides=[N * K, K, 1],
                                                   block_shape=[1, BLOCK_N, BLOCK_K])
        rm = tl.arange(0, BLOCK_M)
        rn = tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        tiles_n = tl.cdiv(N, BLOCK_N)
        tile = tl.program_id(0)
        done = 0  # tiles of the experts before e
        for e in range(EXPERTS):
            start = tl.load(offsets_ptr + e)
            count = tl.load(offsets_ptr + e + 1) - start
            tiles_m = tl.cdiv(count, BLOCK_M)
            if tile < done + tiles_m * tiles_n:
                if TMA_STORE:  # bounded at the expert's last row: a box never writes the next expert's
                    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[start + count, N], strides=[N, 1],
                                                         block_shape=[BLOCK_M, BLOCK_N])
                while tile < done + tiles_m * tiles_n:
                    t = tile - done
                    m0 = (t % tiles_m) * BLOCK_M
                    n0 = (t // tiles_m) * BLOCK_N
                    pos = start + m0 + rm
                    row_ok = m0 + rm < count
                    col_ok = n0 + rn < N
                    if GATHER_A:
                        a_rows = tl.load(a_index_ptr + pos, mask=row_ok, other=0)
                    else:
                        a_rows = pos
                    a_ptrs = a_ptr + a_rows.to(tl.int64)[:, None] * K + rk[None, :]
                    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
                    for k0 in range(0, K, BLOCK_K):
                        k_ok = k0 + rk < K
                        if TMA_A:
                            a = a_desc.load([start + m0, k0])
                        else:
                            a = tl.load(a_ptrs + k0, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
                        if W_KN:
                            if TMA_W:
                                b = tl.reshape(w_desc.load([e, k0, n0]), [BLOCK_K, BLOCK_N])
                            else:
                                b_rows = (e * K + k0 + rk).to(tl.int64)
                                b = tl.load(w_ptr + b_rows[:, None] * N + (n0 + rn)[None, :],
                                            mask=k_ok[:, None] & col_ok[None, :], other=0.0)
                            acc = tl.dot(a, b, acc)
                        else:
                            if TMA_W:
                                b = tl.reshape(w_desc.load([e, n0, k0]), [BLOCK_N, BLOCK_K])
                            else:
                                b_rows = (e * N + n0 + rn).to(tl.int64)
                                b = tl.load(w_ptr + b_rows[:, None] * K + (k0 + rk)[None, :],
                                            mask=col_ok[:, None] & k_ok[None, :], other=0.0)
                            acc = tl.dot(a, tl.trans(b), acc)
                    c = acc.to(out_ptr.dtype.element_ty)
                    if TMA_STORE:
                        out_desc.store([start + m0, n0], c)
                    else:
                        if SCATTER_OUT:
                            out_rows = tl.load(rows_ptr + pos, mask=row_ok, other=0)
                        else:
                            out_rows = pos
                        tl.store(out_ptr + out_rows.to(tl.int64)[:, None] * N + (n0 + rn)[None, :], c,
                                 mask=row_ok[:, None] & col_ok[None, :])
                    tile += programs
            done += tiles_m * tiles_n

    @triton.jit
    def grouped_dw_kernel(dy_ptr, x_ptr, out_ptr, rows_ptr, toks_ptr, offsets_ptr, R, I, H, programs,
                          EXPERTS: tl.constexpr, GATHER_DY: tl.constexpr, GATHER_X: tl.constexpr,
                          TMA_DY: tl.constexpr, TMA_X: tl.constexpr, TMA_STORE: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        """dw_e [I, H] = sum over e's expert-order positions s of dy_s^T x_s: dy_s is dy[rows[s]] with
        GATHER_DY, else dy[s]; x_s is x[toks[s]] with GATHER_X, else x[s]. An expert without rows
        runs no K step and stores zeros."""
        tl.static_assert(not (TMA_DY and GATHER_DY), "a TMA box cannot gather rows")
        tl.static_assert(not (TMA_X and GATHER_X), "a TMA box cannot gather rows")
        if TMA_DY:  # boxes run past an expert's last row: the other side's rows there are zeros (below)
            dy_desc = tl.make_tensor_descriptor(dy_ptr, shape=[R, I], strides=[I, 1], block_shape=[BLOCK_K, BLOCK_M])
        if TMA_X:
            x_desc = tl.make_tensor_descriptor(x_ptr, shape=[R, H], strides=[H, 1], block_shape=[BLOCK_K, BLOCK_N])
        if TMA_STORE:
            out_desc = tl.make_tensor_descriptor(out_ptr, shape=[EXPERTS, I, H], strides=[I * H, H, 1],
                                                 block_shape=[1, BLOCK_M, BLOCK_N])
        rm = tl.arange(0, BLOCK_M)
        rn = tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        tiles_m = tl.cdiv(I, BLOCK_M)
        per_expert = tiles_m * tl.cdiv(H, BLOCK_N)
        for tile in range(tl.program_id(0), EXPERTS * per_expert, programs):
            e = tile // per_expert
            m0 = (tile % per_expert % tiles_m) * BLOCK_M
            n0 = (tile % per_expert // tiles_m) * BLOCK_N
            start = tl.load(offsets_ptr + e)
            end = tl.load(offsets_ptr + e + 1)
            m_ok = m0 + rm < I
            n_ok = n0 + rn < H
            acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            for k0 in range(start, end, BLOCK_K):
                pos = k0 + rk
                k_ok = pos < end
                if TMA_DY:
                    a = dy_desc.load([k0, m0])
                    if TMA_X:  # both boxes hold the next expert's rows: zero this side of them
                        a = tl.where(k_ok[:, None], a, 0.0)
                else:
                    if GATHER_DY:
                        dy_rows = tl.load(rows_ptr + pos, mask=k_ok, other=0)
                    else:
                        dy_rows = pos
                    a = tl.load(dy_ptr + dy_rows.to(tl.int64)[:, None] * I + (m0 + rm)[None, :],
                                mask=k_ok[:, None] & m_ok[None, :], other=0.0)
                if TMA_X:
                    b = x_desc.load([k0, n0])
                else:
                    if GATHER_X:
                        x_rows = tl.load(toks_ptr + pos, mask=k_ok, other=0)
                    else:
                        x_rows = pos
                    b = tl.load(x_ptr + x_rows.to(tl.int64)[:, None] * H + (n0 + rn)[None, :],
                                mask=k_ok[:, None] & n_ok[None, :], other=0.0)
                acc = tl.dot(tl.trans(a), b, acc)
            c = acc.to(out_ptr.dtype.element_ty)
            if TMA_STORE:
                out_desc.store([e, m0, n0], tl.reshape(c, [1, BLOCK_M, BLOCK_N]))
            else:
                out_rows = e.to(tl.int64) * I + m0 + rm
                tl.store(out_ptr + out_rows[:, None] * H + (n0 + rn)[None, :], c, mask=m_ok[:, None] & n_ok[None, :])
else:  # what Launch names, so that its torch side can be exercised without Triton (tests/python)
    grouped_rows_kernel = grouped_dw_kernel = None


def _scratch(size, alignment, stream):
    """Global memory Triton asks for at a launch (the tensor descriptors a kernel makes live there)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


class Launch:
    """One config over the workload `x`: compile() compiles it without running anything (prepare threads
    must not launch while a measure runs); a call runs the unfused permutations (torch) and the kernel
    and returns the output. The buffers are made at the first call (the measurer's thread), the output
    NaN-filled, so that a config that writes nothing fails validation."""

    def __init__(self, config, problem, x):
        c, p = config, problem
        self.x, self.pass_, self.buffers = x, p["pass"], None
        self.dims = (x["rows"].numel(), p["hidden"], p["intermediate"])  # R, H, I
        self.out_shape = {"fwd": (self.dims[0], p["intermediate"]), "dX": (self.dims[0], p["hidden"]),
                          "dW": (p["experts"], p["intermediate"], p["hidden"])}[self.pass_]
        self.tma = any(c[k] for k in TMA_FLAGS)
        self.meta = dict(EXPERTS=p["experts"], BLOCK_M=c["BLOCK_SIZE_M"], BLOCK_N=c["BLOCK_SIZE_N"],
                         BLOCK_K=c["BLOCK_SIZE_K"], num_warps=c["num_warps"], num_stages=c["num_stages"],
                         TMA_STORE=c["use_tma_store"])
        # A side the kernel does not fuse is a torch launch of its own: gathered into an expert-order
        # buffer before the kernel (xs, dys), or written in expert order (outs) and scattered after it.
        self.gathers, self.scatter_after = [], False
        if self.pass_ == "dW":
            self.kernel = grouped_dw_kernel
            self.dy = "dy" if c["permute_y"] else self._gather("dys", "dy", "rows")
            self.xside = "x" if c["permute_x"] else self._gather("xs", "x", "toks")
            self.meta.update(GATHER_DY=c["permute_y"], GATHER_X=c["permute_x"], TMA_DY=c["use_tma_load_dy"],
                             TMA_X=c["use_tma_load_x"])
        else:
            fwd = self.pass_ == "fwd"
            self.kernel = grouped_rows_kernel
            # fwd reads the x side and writes the y side; dX reads the y side (dy) and writes the x side (dx).
            fused_in, fused_out = (c["permute_x"], c["permute_y"]) if fwd else (c["permute_y"], c["permute_x"])
            src, index = ("x", "toks") if fwd else ("dy", "rows")
            self.a = src if fused_in else self._gather(src + "s", src, index)
            self.a_index, self.scatter_after = index, not fused_out
            self.meta.update(GATHER_A=fused_in, SCATTER_OUT=fused_out, W_KN=not fwd,
                             TMA_A=c["use_tma_load_x"] if fwd else c["use_tma_load_dy"], TMA_W=c["use_tma_load_w"])
        self.grid = (x["programs"],)

    def _gather(self, buffer, src, index):
        self.gathers.append((buffer, src, index))
        return buffer

    def args(self, b):
        """The kernel's arguments from `b`, the workload and the buffers by name."""
        R, H, I = self.dims
        if self.pass_ == "dW":
            return (b[self.dy], b[self.xside], b["out"], b["rows"], b["toks"], b["offsets"], R, I, H, self.grid[0])
        K, N = (H, I) if self.pass_ == "fwd" else (I, H)
        out = "outs" if self.scatter_after else "out"
        return (b[self.a], b[self.a_index], b["w"], b[out], b["rows"], b["offsets"], R, K, N, self.grid[0])

    def compile(self):
        stand_in = self.x["stand_in"]  # a tensor of the operands' type: a kernel compiles for its arguments' types
        names = ("xs", "dys", "outs", "out")
        self.kernel.warmup(*self.args({**self.x, **{n: stand_in for n in names}}), grid=self.grid, **self.meta)

    def allocate(self):
        like = self.x["stand_in"]
        out = {"out": torch.full(self.out_shape, float("nan"), dtype=like.dtype, device=like.device)}
        for buffer, src, _ in self.gathers:
            out[buffer] = torch.empty((self.dims[0], self.x[src].shape[1]), dtype=like.dtype, device=like.device)
        if self.scatter_after:
            out["outs"] = torch.empty_like(out["out"])
        return out

    def __call__(self):
        if self.buffers is None:
            self.buffers = self.allocate()
        b = {**self.x, **self.buffers}
        if self.tma:
            triton.set_allocator(_scratch)  # a context variable: set on the thread that launches
        for buffer, src, index in self.gathers:
            torch.index_select(b[src], 0, b[index], out=b[buffer])
        self.kernel[self.grid](*self.args(b), **self.meta)
        if self.scatter_after:
            b["out"].index_copy_(0, b["rows_long"], b["outs"])
        return b["out"]


def inputs(problem, seed):
    x = workload(problem, seed, "cuda")
    x["programs"] = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    x["stand_in"] = x["w"] if "w" in x else x["dy"]
    return x


def build(config, problem, x):
    launch = Launch(config, problem, x)
    launch.compile()  # here, on a prepare thread
    return launch


# --- torch's time, for speedup_vs_torch ----------------------------------------------------------

BASELINES = (("torch._grouped_mm", "torch_grouped_mm_us"), ("per-expert torch.mm", "torch_mm_loop_us"))


def torch_ns(problem, x, settings, timer):
    """ns of each torch baseline (None where it failed: said on stderr), timed once per problem and
    method as ktune times the configs."""
    method = settings.get("method", "amortized")
    times = x.setdefault("torch_ns", {})
    if method not in times:
        if "torch_ops" not in x:
            import grouped_torch  # torch's baselines, beside moe_routing.py
            xs = x["x"].index_select(0, x["toks"]) if "x" in x else None  # expert order: not timed
            dys = x["dy"].index_select(0, x["rows"]) if "dy" in x else None
            x["torch_ops"] = grouped_torch.baseline(problem["pass"], xs, x.get("w"), dys, x["offsets_list"])
        times[method] = {name: _time_baseline(name, fn, method, settings, timer)
                         for (name, _), fn in zip(BASELINES, x["torch_ops"])}
    return times[method]


def _time_baseline(name, fn, method, settings, timer):
    return triton_common.time_baseline(
        fn, method, settings, timer, BASELINE_SAMPLES,
        f"triton_grouped_gemm.py: {name}", "speedup_vs_torch")


def speedup_metrics(problem, x, samples, settings, timer):
    """speedup_vs_torch (torch's time over the config's median), torch_us (the faster baseline's time) and each
    baseline's; nothing where neither baseline ran."""
    times = {us: ns for (name, us), ns in zip(BASELINES, torch_ns(problem, x, settings, timer).values()) if ns}
    if not times:
        return {}
    best = min(times.values())
    return {"speedup_vs_torch": best / statistics.median(samples), "torch_us": best / 1e3,
            **{us: ns / 1e3 for us, ns in times.items()}}


# --- the family ----------------------------------------------------------------------------------

def device(index):
    """The hello's device, with what the constraints read: smem_per_block (the opt-in maximum) and tma."""
    smem = triton.runtime.driver.active.utils.get_device_properties(index)["max_shared_mem"]
    tma = torch.cuda.get_device_capability(index)[0] >= 9 and hasattr(tl, "make_tensor_descriptor") and hasattr(
        triton, "set_allocator")
    return triton_common.device(index, smem_per_block=float(smem), tma=float(tma))


DESCRIPTION = ("Triton grouped GEMM for MoE with Unsloth's parameters (examples/workers/triton_grouped_gemm.py): "
               "the native grouped_gemm family's key, routing and passes (fwd y = x w_e^T, dX dx = dy w_e, dW dw_e = "
               "dy_e^T x_e); a persistent kernel whose programs take the experts' tiles in turn; permute_x / "
               "permute_y fuse the gather or scatter of the x / y side, use_tma_* move tiles by tensor descriptors; "
               "each trial records speedup_vs_torch, the faster of torch._grouped_mm and a per-expert torch.mm loop "
               "over the config's time")


def family(space):
    spec, fields = spec_family()
    timer = GraphTimer()
    return kw.Family(
        name=spec["name"], key_fields=fields, bucket_field=spec["bucket_field"], flops=spec["flops"],
        bytes=spec["bytes"], space=space, constraints=CONSTRAINTS, **{k: spec[k] for k in SHARDING if k in spec},
        description=DESCRIPTION, inputs=inputs, reference=reference, build=build, compare=compare, timer=timer,
        workload_rules_since=moe_routing.WORKLOAD_RULES,
        metrics=lambda problem, x, samples, settings: speedup_metrics(problem, x, samples, settings, timer))


def _python(expr):
    """A ktune expression of CONSTRAINTS as Python: && || ! as and or not, the key field pass as pass_."""
    expr = re.sub(r"\bpass\b", "pass_", expr.replace("&&", " and ").replace("||", " or "))
    return re.sub(r"!(?!=)", " not ", expr).strip()


_RULES = [compile(_python(c["expr"]), c["expr"], "eval") for c in CONSTRAINTS]


def allowed(config, problem, properties):
    """Whether CONSTRAINTS admit `config` for `problem` on a device with these `properties` (tma, smem_per_block)."""
    names = {**{"pass_" if k == "pass" else k: v for k, v in problem.items()}, **config, **properties}
    return all(eval(rule, {"__builtins__": {}}, names) for rule in _RULES)


def configs(space, problem, properties):
    """The configs of `space` that CONSTRAINTS admit for `problem` on that device."""
    return triton_common.admitted(space, lambda c: allowed(c, problem, properties))


if __name__ == "__main__":
    args, space = parse_args(sys.argv[1:])
    triton_common.serve("triton_grouped_gemm.py", args, lambda: family(space), device)
