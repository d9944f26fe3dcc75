"""ktune's measurement rules in the worker: warm-up (longer after the device sat idle), samples until
the noise target, max_samples or the time cap, and slow-abort against the best median so far, with
the device's conditions read while the samples run."""
import math
import time
from typing import Any, Callable, Dict, List, Optional

from . import gpu_conditions
from ._failures import _Failure


# When this process's device last ran a sample (one measuring thread a worker): after a gap longer
# than _IDLE_GAP_S the next config warms up settle_ms, as ktune's own measurer does (a GPU at its
# power cap lowers its clocks within half a second of load; a config timed straight after a pause
# would be timed at clocks the others never see).
_last_busy: Optional[float] = None
_IDLE_GAP_S = 0.1


def _timed(timer, run: Callable[[], Any], launches: int) -> float:
    """One sample of `launches` launches. ktune takes only times, positive and finite: a timer's NaN,
    zero or negative reading is reported as the failed measurement it is."""
    global _last_busy
    ns = timer(run, launches)
    _last_busy = time.monotonic()
    try:
        value = float(ns)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise _Failure("crashed", f"the timer returned {ns!r} ns per launch over {launches} launch(es); "
                                  "a sample is a positive, finite time")
    return value


def _robust_rel_error(samples: List[float]) -> float:
    """ktune's noise measure: standard error over mean after dropping outliers beyond 3 robust sigmas."""
    if len(samples) < 2:
        return math.inf
    s = sorted(samples)
    med = s[len(s) // 2]
    mad = sorted(abs(x - med) for x in samples)[len(s) // 2]
    limit = 3 * 1.4826 * mad
    kept = [x for x in samples if limit == 0 or abs(x - med) <= limit]
    if len(kept) < 2:
        return math.inf
    mean = sum(kept) / len(kept)
    var = max(0.0, sum((x - mean) ** 2 for x in kept) / (len(kept) - 1))
    return math.sqrt(var / len(kept)) / mean if mean > 0 else math.inf


def _measure(run: Callable[[], Any], timer, settings: dict, best: Optional[float],
             read: Optional[Callable[[], Any]] = None, conditions: Optional[Dict[str, float]] = None):
    """Warm-up, then samples until the noise target, max_samples or the time cap (ktune's rules).
    `read` (a gpu_conditions reader) is called on a thread of its own while the samples run (not the
    warm-up), and `conditions` gets their summary (gpu_conditions.summarize)."""
    start = time.monotonic()
    cap_ms = settings.get("max_ms_per_config", 2000.0)
    elapsed_ms = lambda: (time.monotonic() - start) * 1e3
    warmup_ms = settings.get("warmup_ms", 20.0)
    if _last_busy is None or start - _last_busy > _IDLE_GAP_S:
        warmup_ms = max(warmup_ms, min(settings.get("settle_ms", 500.0), cap_ms / 2))
    first = _timed(timer, run, 1)
    if elapsed_ms() > cap_ms:
        return "timeout", f"one launch took {first / 1e6:.3f} ms; the cap is {cap_ms} ms per config", []
    launches = 1
    if settings.get("method", "amortized") == "amortized" and first > 0:
        launches = int(min(1e6, max(1.0, math.ceil(settings.get("min_sample_ms", 2.0) * 1e6 / first))))
    while elapsed_ms() < warmup_ms:
        _timed(timer, run, launches)
        if elapsed_ms() > cap_ms:
            return "timeout", f"warm-up exceeded the time cap of {cap_ms} ms", []
    with gpu_conditions.sampling(read) as got:
        result = _samples(run, timer, settings, best, launches, elapsed_ms, cap_ms)
    if conditions is not None:
        conditions.update(got)
    return result


def _samples(run: Callable[[], Any], timer, settings: dict, best: Optional[float], launches: int,
             elapsed_ms: Callable[[], float], cap_ms: float):
    """_measure's samples, after its warm-up: (status, note, samples)."""
    lo = max(1, settings.get("min_samples", 5))
    hi = max(lo, settings.get("max_samples", 100))
    samples: List[float] = []
    while len(samples) < hi:
        samples.append(_timed(timer, run, launches))
        if settings.get("slow_abort", True) and best and len(samples) >= 3:
            if min(samples) > best * (1 + settings.get("slow_abort_margin", 0.25)):
                return "slow_abort", f"fastest of {len(samples)} samples is {min(samples) / best:.3f}x the best median", samples
        if len(samples) >= lo and _robust_rel_error(samples) <= settings.get("noise_target", 0.01):
            break
        if elapsed_ms() > cap_ms:
            if len(samples) < lo:
                return "timeout", f"only {len(samples)} of {lo} samples fit in the cap of {cap_ms} ms per config", samples
            return "ok", f"time cap reached at noise {_robust_rel_error(samples) * 100:.2f}%", samples
    return "ok", "", samples
