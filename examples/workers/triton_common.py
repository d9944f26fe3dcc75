"""What the Triton workers beside this file share: their flags (each narrows a parameter), the
configs their constraints admit, timing by CUDA graphs (cold or warm) and of torch's baselines, the
comparison with a torch reference, the device they describe in their hello, and serving. torch and
triton are imported here only where present, so that a worker's non-GPU parts load without them."""
import argparse
import itertools
import json
import math
import os
import statistics
import sys
import time

try:
    import torch
except ImportError:
    torch = None
try:
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

SHARDING = ("tp_out_field", "tp_in_field", "tp_head_fields", "shape_rules")  # kw.Family's names, the spec's


def spec_family(path):
    """(spec, key fields) of the native family's spec at `path` that a worker shares: its key fields (as
    kw.Family takes them), bucket and costs, and (SHARDING) how --tp-size divides a shape and the rules a
    shape must satisfy."""
    with open(path) as f:
        spec = json.load(f)
    fields = [{k: v for k, v in field.items() if k in ("name", "numeric", "default", "choices", "help")}
              for field in spec["key_fields"]]
    return spec, fields


def compare(out, ref, tol):
    """(max abs error, mismatch fraction) of `out` against the f32 reference, on the device."""
    err = (out.float() - ref).abs()
    bad = ~(err <= tol.atol + tol.rtol * ref.abs())  # NaN counts as a mismatch
    return float(err.nan_to_num(float("inf")).max()), float(bad.float().mean())


_FLUSH = []  # a buffer of twice the L2, made at the first cold launch


def _flush_l2():
    """Writes twice the L2's bytes, so that the launch timed next finds none of its data there."""
    if not _FLUSH:
        size = 2 * torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        _FLUSH.append(torch.empty(size, dtype=torch.int8, device="cuda"))
    _FLUSH[0].fill_(1)


class GraphTimer:
    """ns per launch over a CUDA graph of `launches` launches (Python's launch cost is not timed).
    One launch is timed cold: a buffer of twice the L2 is written first, before the start event."""

    KEEP = 8  # graphs kept: ktune's re-measure alternates a few configs

    def __init__(self):
        self.graphs = {}

    def __call__(self, run, launches):
        key = (id(run), launches)
        if key not in self.graphs:
            if len(self.graphs) >= self.KEEP:
                self.graphs.pop(next(iter(self.graphs)))
            run()  # once outside the capture: a launch's first-call work (its buffers, a NaN fill) stays out
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, capture_error_mode="thread_local"):  # prepare threads keep compiling
                for _ in range(launches):
                    run()
            self.graphs[key] = (g, run)  # holding run keeps id(run) from being reused by another config
        g = self.graphs[key][0]
        if launches == 1:
            _flush_l2()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e6 / launches


def device(index, **properties):
    """The hello's device: GPU `index` by its name, the numbers constraints may use (`properties` added)."""
    p = torch.cuda.get_device_properties(index)
    return {"backend": "triton", "index": index, "name": p.name,
            "properties": {"sms": float(p.multi_processor_count), "cc_major": float(p.major),
                           "cc_minor": float(p.minor), "l2_bytes": float(p.L2_cache_size),
                           "memory_bytes": float(p.total_memory), **properties},
            "text": {"triton": triton.__version__, "torch": torch.__version__}}



def parse_space(prog, doc, argv, space, flags, values, shown=None, more=None):
    """(args, space): a worker's flags, each of `flags` ({flag: param}) a comma-separated list that
    narrows its parameter of `space` to those candidates, and the `--device I` ktune appends with
    --devices. `values(parser, flag, param, given)` reads a list (parser.error on a bad word);
    `shown(param)` writes the help's candidates (by default as numbers); `more(parser)` adds the
    worker's other flags."""
    shown = shown or (lambda param: ",".join(map(str, space[param])))
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, param in flags.items():
        p.add_argument(flag, metavar="LIST", help=f"{param} values, of {shown(param)}")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (ktune --devices appends it)")
    if more:
        more(p)
    args = p.parse_args(argv)
    narrowed = dict(space)
    for flag, param in flags.items():
        given = getattr(args, flag[2:].replace("-", "_"))
        if given is None:
            continue
        narrowed[param] = values(p, flag, param, given)
        bad = [v for v in narrowed[param] if v not in space[param]]
        if bad:
            p.error(f"{flag} {given!r}: {bad} not among {param}'s candidates {space[param]}")
    return args, narrowed


def admitted(space, allows):
    """The configs of `space` (every combination of its candidates, in order) for which `allows(config)`."""
    every = (dict(zip(space, values)) for values in itertools.product(*space.values()))
    return [c for c in every if allows(c)]


def eager_timer(run, launches):
    """ns per launch of `launches` launches queued back to back between events, without a graph: for a
    torch op that a capture refuses (one that copies from the host). Where a launch takes longer than
    its Python call the GPU stays ahead and this is the GPU's time; a single launch also counts its
    launch latency (a few µs). One launch is timed cold, as GraphTimer does."""
    if launches == 1:
        _flush_l2()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(launches):
        run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e6 / launches


def _median_ns(fn, method, settings, timer, at_least):
    first = timer(fn, 1)
    launches = 1 if method == "per_launch" else max(1, math.ceil(settings.get("min_sample_ms", 2.0) * 1e6 / first))
    samples = min(max(at_least, settings.get("min_samples", 5)), settings.get("max_samples", 100))
    start = time.monotonic()
    timer(fn, launches)  # warm-up (and the capture of its graph), --warmup-ms of it as a config's
    while (time.monotonic() - start) * 1e3 < settings.get("warmup_ms", 20.0):
        timer(fn, launches)
    return statistics.median(timer(fn, launches) for _ in range(samples))


def _first_line(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def time_baseline(fn, method, settings, timer, at_least, who, metric):
    """ns of torch's `fn` timed as ktune times a config under `method` and the run's `settings` (the
    same graphs; the median of `at_least` samples or --min-samples if more), or None where it fails:
    then stderr says that `who` (the script and the baseline) is left out of `metric`, and why. An op
    that runs but cannot be captured in a graph is timed by eager_timer instead, and stderr says so."""
    def left_out(e):
        return f"{who} is left out of {metric}: {_first_line(e)}"

    try:
        fn()  # eager first: an op this torch lacks, or a layout it refuses, fails here, not in a capture
        torch.cuda.synchronize()
    except Exception as e:
        print(left_out(e), file=sys.stderr, flush=True)
        return None
    try:
        return _median_ns(fn, method, settings, timer, at_least)
    except Exception as e:
        print(f"{who} cannot be captured in a CUDA graph ({_first_line(e)}): timed without one, "
              "its launches queued back to back", file=sys.stderr, flush=True)
    try:
        return _median_ns(fn, method, settings, eager_timer, at_least)
    except Exception as e:
        print(left_out(e), file=sys.stderr, flush=True)
        return None


def serve(script, args, family, describe, gpu="a CUDA GPU", f32_products=True):
    """Serves `family()` on GPU args.device, described by `describe(index)`; exits saying what is missing
    where torch or triton is not importable. `f32_products`: TF32 off, so that a reference's f32
    products stay f32."""
    if torch is None or triton is None:
        sys.exit(f"{script} needs torch and triton with {gpu}: "
                 f"{'torch' if torch is None else 'triton'} is not importable by {sys.executable}")
    import ktune_worker as kw  # found on the path the worker set up (python/)
    torch.cuda.set_device(args.device)
    if f32_products:
        torch.backends.cuda.matmul.allow_tf32 = False
    kw.serve(family(), backend="triton", device=describe(args.device), prepare_threads=os.cpu_count() or 4,
             device_count=torch.cuda.device_count(), thread_init=lambda: torch.cuda.set_device(args.device))
