"""What the Triton workers beside this file share: timing by CUDA graphs (cold or warm), the
comparison with a torch reference, and the device they describe in their hello. torch and triton
are imported here only where present, so that a worker's non-GPU parts load without them."""
try:
    import torch
except ImportError:
    torch = None
try:
    import triton
except ImportError:
    triton = None


def compare(out, ref, tol):
    """(max abs error, mismatch fraction) of `out` against the f32 reference, on the device."""
    err = (out.float() - ref).abs()
    bad = ~(err <= tol.atol + tol.rtol * ref.abs())  # NaN counts as a mismatch
    return float(err.nan_to_num(float("inf")).max()), float(bad.float().mean())


class GraphTimer:
    """ns per launch over a CUDA graph of `launches` launches (Python's launch cost is not timed).
    One launch is timed cold: a buffer of twice the L2 is written first, before the start event."""

    KEEP = 8  # graphs kept: ktune's re-measure alternates a few configs

    def __init__(self):
        self.graphs = {}
        self.flush = None

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
            if self.flush is None:
                self.flush = torch.empty(2 * torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size, dtype=torch.int8,
                                         device="cuda")
            self.flush.fill_(1)
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
