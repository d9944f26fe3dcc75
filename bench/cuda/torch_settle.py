"""settle(fn, seconds): the warm-up the bench's torch baselines get before they are timed beside
ktune's winners (bench/cuda/grouped_torch.py, bench/cuda/a8w8_torch.py)."""
import torch


def settle(fn, seconds):
    """Runs fn back to back for `seconds` of device time. An H100 or H200 under a sustained
    tensor-core load lowers its clocks within seconds of an idle start (bench/cuda/RESULTS.md
    section 12): a baseline timed at once would be timed at clocks no kernel holds for long, while
    ktune re-measures its winners at the end of a search that kept the GPU busy."""
    if seconds <= 0:
        return
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    while True:
        for _ in range(10):
            fn()
        stop.record()
        stop.synchronize()
        if start.elapsed_time(stop) >= seconds * 1000.0:
            return
