"""ktune_worker: turn a kernel into a ktune worker (docs/worker-protocol.md). Standard library only.

    import ktune_worker as kw
    kw.serve(kw.Family(
        name="matmul", key_fields=["M", "N", "K"], flops="2*M*N*K",
        space={"BLOCK": [32, 64], "order": ["ij", "ji"]},
        inputs=lambda problem, seed: make_inputs(problem, seed),
        reference=lambda problem, inputs: inputs["a"] @ inputs["b"],
        build=lambda config, problem, inputs: (lambda: my_kernel(inputs, **config)),
    ))

ktune sends a problem (its key fields), a config and the measurement settings; this package
builds the config, validates its output against the reference and times it with warm-up and
the noise target ktune asked for, answering on stdout. Anything the kernel prints goes to stderr.
README.md beside this file says how to write a worker; docs/worker-protocol.md is the protocol.
"""
import faulthandler
import inspect
import json
import math
import os
import platform
import re
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import gpu_conditions
from ._failures import _Failure, _describe, _run_failure
from ._measuring import _measure, _timed

PROTOCOL = 1
__all__ = ["Family", "Tolerance", "serve", "wall_timer", "default_device_name", "device_index", "PROTOCOL",
           "CONDITIONS", "gpu_conditions"]
# What the device was doing while a config was timed, by the names ktune records (ktune/conditions.h):
# the median SM clock (MHz), the median board power (W) and the share of readings in which a power
# or thermal limit held the clock down. ktune_worker reads them itself (Family.conditions): a
# family's metrics callback may not return these names.
CONDITIONS = ("sm_clock_mhz", "power_w", "clock_limited")
# After ktune's stdin closes (ktune is gone) or after shutdown, this long for threads to finish
# before the process ends anyway: a kernel stuck in a measure must not keep a GPU forever.
_EXIT_GRACE_S = 1.0


@dataclass
class Tolerance:
    atol: float = 1e-2
    rtol: float = 1e-2
    max_mismatch_fraction: float = 0.0


def wall_timer(fn: Callable[[], Any], launches: int) -> float:
    """Nanoseconds per call of `fn`, for synchronous (CPU) kernels. GPU workers pass a timer
    that uses device events (and synchronizes) instead."""
    t0 = time.perf_counter_ns()
    for _ in range(launches):
        fn()
    return (time.perf_counter_ns() - t0) / launches


@dataclass
class Family:
    name: str
    key_fields: List[Any]  # "M", or {"name": "dtype", "numeric": False, "default": "f32", "choices": [...]}
    space: Dict[str, List[Any]]  # parameter -> candidates (integers, strings or booleans)
    # (problem, seed) -> inputs, identical for every config; an `inputs` with a `key` parameter is also given
    # ktune's problem key (the fields in the family's order, ",tp=T/dim" under --tp-size), which kernel
    # specs seed their generated arguments from.
    inputs: Callable[..., Any]
    reference: Callable[[Dict[str, Any], Any], Any]  # (problem, inputs) -> expected output
    build: Callable[[Dict[str, Any], Dict[str, Any], Any], Callable[[], Any]]  # (config, problem, inputs) -> run
    constraints: List[str] = field(default_factory=list)  # ktune expressions over parameters and key fields
    flops: str = "0"
    bytes: str = "0"
    description: str = ""
    bucket_field: str = ""
    # Tensor parallelism, as a kernel spec says it: `ktune tune --tp-size T` then sends the local
    # (per-rank) shape. tp_out_field / tp_in_field: the numeric key field --tp-split-dim out / in
    # divides; tp_head_fields: key fields divided together ("num_q_heads", or {"name":
    # "num_kv_heads", "at_least_one": True}: replicated one per rank when fewer than ranks).
    tp_out_field: str = ""
    tp_in_field: str = ""
    tp_head_fields: List[Any] = field(default_factory=list)
    # Rules every (local) shape must satisfy, over the key fields: {"expr": "mod(H, KVH) == 0",
    # "description": "..."}; ktune refuses a --shape that breaks one with its description.
    shape_rules: List[Dict[str, str]] = field(default_factory=list)
    # The version of ktune's workload rules in which the inputs this family mirrors last changed
    # (a worker that draws a MoE routing as ktune does: 2). A run made under older rules measured
    # other inputs, and ktune refuses to resume it. 1: inputs of the worker's own.
    workload_rules_since: int = 1
    tolerance: Optional[Tolerance] = None  # None: what ktune sends (--atol, --rtol, --max-mismatch)
    timer: Callable[[Callable[[], Any], int], float] = wall_timer
    # (output, reference, tolerance) -> (max abs error, mismatch fraction). None: numpy arrays or
    # nested lists are compared here; a GPU worker compares on the device (torch, cupy) instead.
    compare: Optional[Callable[[Any, Any, Tolerance], Tuple[float, float]]] = None
    # (problem, inputs, samples_ns, settings) -> {name: number}: numbers recorded beside the trial's time
    # (trials.csv's metrics column, the workbench's y axis), e.g. a speedup over a baseline timed here.
    # Called on the measuring thread after a config's samples, with ktune's measurement settings.
    metrics: Optional[Callable[[Dict[str, Any], Any, List[float], Dict[str, Any]], Dict[str, float]]] = None
    # Where the device's conditions (CONDITIONS: SM clock, board power, clock limits) are read while the
    # config's samples run: the measured answer's metrics and each sampled answer's "conditions".
    # None: through NVML, from torch's current CUDA device when the family's module imported torch
    # before serve() and torch sees an NVIDIA GPU, else not at all. False: never. A PCI bus id
    # ("00000000:1b:00.0", gpu_conditions.bus_id(domain, bus, device)): that NVIDIA GPU through NVML
    # (a CuPy family). A callable: read() -> (SM MHz, board W, NVML clock event reasons), each None
    # where not read, called on a thread of its own while the samples run (a reader of your own).
    conditions: Any = None

    def __post_init__(self):
        _check_sharding(self)
        c = self.conditions
        if not (c is None or c is False or callable(c) or (isinstance(c, str) and _BUS_ID.match(c))):
            raise ValueError(f"Family {self.name!r}: conditions: expected None (torch's current CUDA device), "
                             f"False (none), a PCI bus id ('00000000:1b:00.0') or a reader, got {c!r}")

    def _fields(self) -> List[dict]:
        fields = []
        for f in self.key_fields:
            f = {"name": f} if isinstance(f, str) else dict(f)
            fields.append({"name": f["name"], "numeric": f.get("numeric", True), "default": str(f.get("default", "")),
                           "choices": f.get("choices", []), "help": f.get("help", "")})
        return fields

    def to_json(self) -> dict:
        out = {"name": self.name, "description": self.description, "key_fields": self._fields(),
               "bucket_field": self.bucket_field, "flops": self.flops, "bytes": self.bytes,
               "space": {"parameters": [{"name": k, "values": list(v)} for k, v in self.space.items()],
                         "constraints": list(self.constraints)},
               "default_config": {k: v[0] for k, v in self.space.items()}, "source": "worker"}
        for key in ("tp_out_field", "tp_in_field"):
            if getattr(self, key):  # left out when unset: the hello of a family without them
                out[key] = getattr(self, key)
        for key in ("tp_head_fields", "shape_rules"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        if self.workload_rules_since != 1:
            out["workload_rules_since"] = self.workload_rules_since
        return out


# A PCI bus id as NVML finds a device by (domain:bus:device.function; the domain 4 or 8 digits).
_BUS_ID = re.compile(r"^(?:[0-9a-fA-F]{4}|[0-9a-fA-F]{8}):[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")

# What a ktune expression may name besides key fields: its literals and constants.
_EXPR_WORDS = {"true", "false", "_pi", "_e"}


def _check_sharding(family: Family) -> None:
    """ValueError naming the family and the field when its tensor-parallel fields or shape rules are
    not what ktune reads (ktune would refuse the hello with the same complaint, later and farther away)."""
    where = f"Family {family.name!r}"
    fields = family._fields()
    numeric = [f["name"] for f in fields if f["numeric"]]

    def numeric_field(name, what):
        if not isinstance(name, str) or name not in numeric:
            raise ValueError(f"{where}: {what}: {name!r} is not a numeric key field (those are: {', '.join(numeric)})")

    for key in ("tp_out_field", "tp_in_field"):
        if getattr(family, key):
            numeric_field(getattr(family, key), key)
    if not isinstance(family.tp_head_fields, (list, tuple)):
        raise ValueError(f"{where}: tp_head_fields: expected a list of key field names, got {family.tp_head_fields!r}")
    for i, h in enumerate(family.tp_head_fields):
        what = f"tp_head_fields[{i}]"
        if isinstance(h, dict):
            if "name" not in h or set(h) - {"name", "at_least_one"}:
                raise ValueError(f"{where}: {what}: expected {{'name': ..., 'at_least_one': True}}, got {h!r}")
            if not isinstance(h.get("at_least_one", False), bool):
                raise ValueError(f"{where}: {what}.at_least_one: expected True or False, got {h['at_least_one']!r}")
            h = h["name"]
        numeric_field(h, what)
    if isinstance(family.workload_rules_since, bool) or not isinstance(family.workload_rules_since, int) \
            or family.workload_rules_since < 1:
        raise ValueError(f"{where}: workload_rules_since: expected a version of ktune's workload rules (1, 2, ...), "
                         f"got {family.workload_rules_since!r}")
    if not isinstance(family.shape_rules, (list, tuple)):
        raise ValueError(f"{where}: shape_rules: expected a list of {{'expr', 'description'}}, "
                         f"got {family.shape_rules!r}")
    names = {f["name"] for f in fields}
    for i, r in enumerate(family.shape_rules):
        what = f"shape_rules[{i}]"
        if (not isinstance(r, dict) or not isinstance(r.get("expr"), str) or not r["expr"].strip()
                or not isinstance(r.get("description", ""), str) or set(r) - {"expr", "description"}):
            raise ValueError(f"{where}: {what}: expected {{'expr': 'a ktune expression', 'description': '...'}}, "
                             f"got {r!r}")
        # Names not called as functions, outside string literals, must be key fields.
        text = re.sub(r"\"[^\"]*\"|'[^']*'", "", r["expr"])
        for name in re.findall(r"(?<![\w.])[A-Za-z_]\w*(?!\w|\s*\()", text):
            if name not in names and name not in _EXPR_WORDS:
                raise ValueError(f"{where}: {what}.expr {r['expr']!r}: {name!r} is not a key field")


def _compare(out: Any, ref: Any, tol: Tolerance):
    """(max abs error, mismatch fraction) of out against ref; numpy arrays are compared whole."""
    if hasattr(out, "__array__") and hasattr(ref, "__array__"):
        import numpy as np  # only when the kernel already uses numpy
        o, r = np.asarray(out, dtype=np.float64).ravel(), np.asarray(ref, dtype=np.float64).ravel()
        if o.shape != r.shape:
            raise _Failure("wrong_result", f"output has {o.size} elements, the reference {r.size}")
        err = np.abs(o - r)
        bad = ~(err <= tol.atol + tol.rtol * np.abs(r))  # NaN counts as a mismatch
        return float(np.nanmax(err)) if err.size else 0.0, float(bad.mean()) if err.size else 0.0
    o, r = list(_flat(out)), list(_flat(ref))
    if len(o) != len(r):
        raise _Failure("wrong_result", f"output has {len(o)} elements, the reference {len(r)}")
    worst, bad = 0.0, 0
    for a, b in zip(o, r):
        e = abs(float(a) - float(b))
        worst = max(worst, e) if not math.isnan(e) else worst
        bad += not (e <= tol.atol + tol.rtol * abs(float(b)))
    return worst, bad / len(r) if r else 0.0


def _takes_key(fn) -> bool:
    """Whether `fn` (a family's inputs) takes the problem's key as `key`."""
    try:
        return "key" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or a C callable without a signature
        return False


def _checked_metrics(numbers) -> Dict[str, float]:
    """A metrics callback's numbers as ktune reads them: names and finite numbers, "device" being ktune's
    and the CONDITIONS ktune_worker's."""
    if not isinstance(numbers, dict):
        raise _Failure("crashed", f"metrics returned {numbers!r}; expected a dict of names and numbers")
    out = {}
    for name, value in numbers.items():
        if not isinstance(name, str) or not name or name == "device":
            raise _Failure("crashed", f"metrics returned the name {name!r}: a metric is named by a non-empty string "
                                      "other than 'device' (ktune's: which device measured a trial)")
        if name in CONDITIONS:
            raise _Failure("crashed", f"metrics returned the name {name!r}: {', '.join(CONDITIONS)} are the device's "
                                      "conditions, which ktune_worker reads itself while the samples run; give the "
                                      "Family a conditions reader (Family.conditions) instead, or name the number "
                                      "otherwise")
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = math.nan
        if isinstance(value, bool) or not math.isfinite(v):
            raise _Failure("crashed", f"metrics returned {name}={value!r}; a metric is a finite number")
        out[name] = v
    return out


def _checked_conditions(conditions: Dict[str, float]) -> Dict[str, float]:
    """The conditions a reader gave, as ktune takes them: non-negative numbers, clock_limited a share."""
    for name, value in conditions.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0
                and (name != "clock_limited" or value <= 1)):
            raise _Failure("crashed", f"the conditions reader gave {name}={value!r}; ktune takes a non-negative number"
                                      f"{' from 0 to 1' if name == 'clock_limited' else ''}")
    return conditions


def _done(value):
    """A finished future holding `value`, like the prepare pool's."""
    fut: Future = Future()
    fut.set_result(value)
    return fut


def _flat(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _flat(y)
    else:
        yield x


class _Worker:
    def __init__(self, families: List[Family], backend: str, device: Optional[dict], prepare_threads: int,
                 device_count: Optional[int], thread_init: Optional[Callable[[], None]] = None):
        # The protocol owns the real stdout; print() in a kernel goes to stderr.
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        faulthandler.enable()  # a segfaulting kernel leaves its Python stack on stderr, which ktune records
        self.families = {f.name: f for f in families}
        self.takes_key = {f.name for f in families if _takes_key(f.inputs)}  # once, not on every problem
        self.backend = backend
        index = device_index() if device is None or "index" not in device else device["index"]
        self.device = dict(device or {"backend": backend, "name": default_device_name(index),
                                      "properties": {"cores": float(os.cpu_count() or 1)}, "text": {}})
        self.device.setdefault("index", index)
        self.device_count = device_count
        self.lock = threading.Lock()
        # thread_init runs first on each thread that prepares or measures: a GPU library's current
        # device is the thread's own (CUDA's is), so one set on the serving thread does not reach them.
        self.pool = ThreadPoolExecutor(max_workers=prepare_threads, initializer=thread_init)
        # Measures run one at a time beside the reader, so prepares are answered meanwhile.
        self.measurer = ThreadPoolExecutor(max_workers=1, initializer=thread_init)
        self.problem_key = None
        self.problem_state = None  # (inputs, reference) of the current problem
        self.prepared: Dict[str, Any] = {}
        self.first_claimed, self.first_built = False, threading.Event()
        # Each family's conditions: a reader, a PCI bus id whose NVML device opens at the first measure
        # (on the measuring thread, before its samples), or None. torch's current device is asked here,
        # on the thread that called serve(): torch keeps it per thread, and the family set it on this one.
        # Without torch, a CUDA GPU or an NVIDIA one: none, said nowhere (a CPU family's is no news).
        auto = gpu_conditions.torch_bus_id()[0] if any(f.conditions is None for f in families) else None
        self.conditions = {f.name: auto if f.conditions is None else f.conditions or None for f in families}
        self.nvml: Dict[str, gpu_conditions.Device] = {}

    def reader(self, fam: Family) -> Optional[Callable[[], Any]]:
        """The family's conditions reader (measuring thread only), None where it has none. A GPU that NVML
        cannot read says why on stderr, once."""
        source = self.conditions[fam.name]
        if not isinstance(source, str):
            return source
        if source not in self.nvml:
            self.nvml[source] = gpu_conditions.Device(source)
            if self.nvml[source].why:
                print(f"ktune_worker: no device conditions (SM clock, power) for {fam.name} from the GPU at PCI bus id "
                      f"{source}: {self.nvml[source].why}", file=sys.stderr, flush=True)
        return self.nvml[source].read

    def send(self, msg: dict) -> None:
        try:
            line = json.dumps(msg, allow_nan=False)
        except ValueError as e:  # NaN or Infinity, which are not JSON: ktune could not read the line
            why = f"the answer held a number JSON cannot carry ({e}): {str(msg)[:200]}"
            answer = "id" in msg and msg["type"] in ("prepared", "measured", "sampled")
            line = json.dumps({"type": "failed", "id": msg["id"], "status": "crashed", "message": why} if answer
                              else {"type": "error", "id": msg.get("id"), "message": why})
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()

    def problem(self, req: dict):
        fam = self.families[req["family"]]
        p = req["problem"]
        key = (req["family"], p["key"], req.get("seed", 0))
        with self.lock:
            if self.problem_key != key:
                self.prepared = {k: v for k, v in self.prepared.items() if k[0] == key}
                extra = {"key": p["key"]} if fam.name in self.takes_key else {}
                inputs = fam.inputs(p["fields"], req.get("seed", 0), **extra)
                self.problem_key, self.problem_state = key, (inputs, fam.reference(p["fields"], inputs))
            return fam, p["fields"], self.problem_state

    def build(self, req: dict):
        t0 = time.perf_counter()
        fam, fields, (inputs, _) = self.problem(req)
        try:
            run = fam.build(dict(req["config"]), fields, inputs)
        except Exception as e:  # the kernel's own compile or configuration error
            raise _Failure("compile_error", _describe(e))
        return run, time.perf_counter() - t0

    def prepare(self, req: dict) -> None:
        if req.get("baseline"):
            self.send({"type": "failed", "id": req["id"], "status": "launch_error", "message": "no baseline"})
            return

        # The first prepare builds alone: one-time set-up (Triton's driver and launcher, a JIT's
        # first import) runs once, for the config measured first, not in every prepare thread
        # at once fighting for the GIL (which held the first measure back by a second).
        first, self.first_claimed = not self.first_claimed, True

        def job():
            try:
                if not first:
                    self.first_built.wait()
                try:
                    result = self.build(req)
                finally:
                    if first:
                        self.first_built.set()
                self.send({"type": "prepared", "id": req["id"], "compile_time_s": result[1]})
                return result
            except _Failure as f:
                self.send({"type": "failed", "id": req["id"], "status": f.status, "message": str(f)})
                return f
            except Exception as e:  # the family's inputs or reference, not the config
                f = _Failure("crashed", _describe(e))
                self.send({"type": "failed", "id": req["id"], "status": f.status, "message": str(f)})
                return f
        key = self._key(req)
        self.prepared[key] = self.pool.submit(job)

    @staticmethod
    def _key(req: dict):
        return ((req["family"], req["problem"]["key"], req.get("seed", 0)), json.dumps(req["config"], sort_keys=True))

    def measure(self, req: dict) -> dict:
        rid = req["id"]
        try:
            fut = self.prepared.pop(self._key(req), None)
            built = fut.result() if fut else self.build(req)
            if isinstance(built, _Failure):
                raise built
            run, compile_s = built
            fam, fields, (inputs, ref) = self.problem(req)
            tol = fam.tolerance or Tolerance(**{k: v for k, v in req.get("tolerance", {}).items()
                                                if k in ("atol", "rtol", "max_mismatch_fraction")})
            try:
                out = run()
            except Exception as e:
                raise _run_failure(e)
            err, frac = (fam.compare or _compare)(out, ref, tol)
            if not 0 <= frac <= 1:
                raise _Failure("wrong_result", f"the comparison gave a mismatch fraction of {frac!r}, not a fraction")
            if frac > tol.max_mismatch_fraction:
                raise _Failure("wrong_result", f"max abs error {err:.6g}, {frac * 100:.4g}% of elements outside "
                                               f"atol {tol.atol} + rtol {tol.rtol}*|ref| (allowed {tol.max_mismatch_fraction * 100:.4g}%)")
            status, note, samples, conditions = "ok", "", [], {}
            if not req.get("validate_only", False):
                read = self.reader(fam)
                try:
                    status, note, samples = _measure(run, fam.timer, req.get("settings", {}), req.get("best_median_ns"),
                                                     read, conditions)
                except _Failure:
                    raise
                except Exception as e:
                    raise _run_failure(e)
            if status == "timeout" and not samples:
                raise _Failure("timeout", note)
            # An output with NaN or infinity has no finite error: null, as ktune reads it.
            error = err if math.isfinite(err) else None
            reply = {"type": "measured", "id": rid, "status": status, "note": note, "samples_ns": samples,
                     "compile_time_s": compile_s, "validation": {"max_abs_error": error, "mismatch_fraction": frac}}
            metrics = {}
            if fam.metrics and samples:
                try:
                    numbers = fam.metrics(fields, inputs, samples, req.get("settings", {}))
                except Exception as e:
                    raise _Failure("crashed", _describe(e))
                if numbers:
                    metrics = _checked_metrics(numbers)
            if samples:
                metrics.update(_checked_conditions(conditions))  # the device's, while the samples ran
            if metrics:
                reply["metrics"] = metrics
            return reply
        except _Failure as f:
            return {"type": "failed", "id": rid, "status": f.status, "message": str(f)}
        except Exception as e:  # the family's inputs, reference or compare
            return {"type": "failed", "id": rid, "status": "crashed", "message": _describe(e)}

    def sample(self, req: dict) -> dict:
        """One timed sample of a prepared config: ktune re-measures a problem's best few configs in
        alternation after its search, so that a lucky search timing cannot crown a config."""
        rid = req["id"]
        if req.get("baseline"):
            return {"type": "failed", "id": rid, "status": "launch_error", "message": "no baseline"}
        try:
            fut = self.prepared.get(self._key(req))  # kept: one config is sampled many times
            built = fut.result() if fut else self.build(req)
            if isinstance(built, _Failure):
                raise built
            if not fut:
                self.prepared[self._key(req)] = _done(built)
            fam = self.problem(req)[0]
            read = self.reader(fam)
            try:
                with gpu_conditions.sampling(read) as conditions:  # read on a thread while the sample runs
                    ns = _timed(fam.timer, built[0], max(1, int(req.get("launches", 1))))
            except _Failure:
                raise
            except Exception as e:
                raise _run_failure(e)
            reply = {"type": "sampled", "id": rid, "ns": ns}
            if conditions:
                reply["conditions"] = _checked_conditions(conditions)
            return reply
        except _Failure as f:
            return {"type": "failed", "id": rid, "status": f.status, "message": str(f)}
        except Exception as e:
            return {"type": "failed", "id": rid, "status": "crashed", "message": _describe(e)}

    def answer(self, handler: Callable[[dict], dict], req: dict) -> None:
        reply = handler(req)
        self.send(reply)
        if reply.get("status") == "crashed":
            # A kernel that raised (a CUDA fault poisons the process's context for good): exit,
            # and ktune starts a fresh worker for the next config.
            os._exit(3)

    def loop(self) -> int:
        for line in sys.stdin:
            try:
                req = json.loads(line)
                kind = req["type"]
            except (ValueError, KeyError, TypeError) as e:
                self.send({"type": "error", "id": None, "message": f"not a protocol message ({e}): {line[:120]!r}"})
                continue
            if kind == "hello":
                if req.get("protocol") != PROTOCOL:
                    self.send({"type": "error", "id": None, "message": f"ktune speaks worker protocol "
                               f"{req.get('protocol')}, this worker speaks {PROTOCOL}; use matching versions"})
                    return 2
                hello = {"type": "hello", "protocol": PROTOCOL, "worker": os.path.basename(sys.argv[0]),
                         "backend": self.backend, "devices": [self.device],
                         "families": [f.to_json() for f in self.families.values()],
                         "versions": {"python": platform.python_version()}}
                if self.device_count:
                    hello["device_count"] = self.device_count
                self.send(hello)
            elif kind == "prepare":
                self.prepare(req)
            elif kind == "measure":
                self.measurer.submit(self.answer, self.measure, req)
            elif kind == "sample":
                self.measurer.submit(self.answer, self.sample, req)
            elif kind == "shutdown":
                self.measurer.shutdown(wait=True)
                self.send({"type": "bye", "id": req.get("id")})
                return 0
            else:
                self.send({"type": "error", "id": req.get("id"), "message": f"unknown message type {kind!r}; protocol "
                           f"{PROTOCOL} has hello, prepare, measure, sample and shutdown"})
        # EOF: ktune is gone and reads no answer. Queued work is dropped; a measure stuck in its
        # kernel is not waited for (serve's exit does not join it).
        self.measurer.shutdown(wait=False, cancel_futures=True)
        return 0


def device_index(default: int = 0) -> int:
    """The device this worker measures on: `--device I` on its command line, which `ktune tune --devices 0,1`
    appends for each device it starts a worker for (e.g. torch.cuda.set_device(kw.device_index()))."""
    if "--device" in sys.argv[:-1]:
        return int(sys.argv[sys.argv.index("--device") + 1])
    return default


def serve(*families: Family, backend: str = "python", device: Optional[dict] = None, prepare_threads: int = 2,
          device_count: Optional[int] = None, thread_init: Optional[Callable[[], None]] = None) -> None:
    """Answers ktune on stdin/stdout until it says shutdown or closes stdin, then exits.
    `prepare_threads` build configs ahead of their measure, in parallel with it and each other
    (ktune sends as many prepares ahead as its --compile-threads). `device` describes the device
    measured on (its "index" defaults to device_index()); `device_count`, how many the machine has,
    lets `ktune tune --devices all` start a worker for each. `thread_init` runs once on every thread
    that prepares or measures, before its first config: where the current GPU is a thread's own (CUDA),
    it selects the worker's (lambda: torch.cuda.set_device(kw.device_index())), or every config but
    the serving thread's lands on device 0."""
    worker = _Worker(list(families), backend, device, prepare_threads, device_count, thread_init)
    code = worker.loop()
    worker.pool.shutdown(wait=False, cancel_futures=True)
    _exit_soon(code)
    sys.exit(code)


def _exit_soon(code: int) -> None:
    """Python joins every executor thread at exit, so one stuck in a kernel would keep the worker
    (and its GPU) forever: a daemon thread ends the process after a grace period if the normal
    exit has not by then."""
    def end():
        time.sleep(_EXIT_GRACE_S)
        for stream in (sys.stderr, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)
    threading.Thread(target=end, name="ktune_worker exit", daemon=True).start()


def _cpu_model_name(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model as Linux names it ("AMD EPYC 7B13"), or "" where it says none."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return ""
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and value.strip():
            fields.setdefault(name.strip(), " ".join(value.split()))
    for key in ("model name", "Model", "Hardware", "cpu model", "cpu"):
        if key in fields:
            return fields[key]
    if "CPU implementer" in fields and "CPU part" in fields:  # Arm cores name themselves by numbers only
        return f"Arm CPU implementer {fields['CPU implementer']} part {fields['CPU part']}"
    return ""


def default_device_name(index: int = 0, cpuinfo: str = "/proc/cpuinfo") -> str:
    """The name a worker's device gets unless serve() is given one: it names the registry file,
    tuned_data/<backend>/<its slug>.json. $KTUNE_DEVICE_NAME when set; else the GPU `index` of
    torch or cupy when the kernel's module imported one of them ("NVIDIA H100 80GB HBM3"); else the
    CPU's model ("AMD EPYC 7B13"); else "<machine> CPU", never a bare architecture ("x86_64"), which
    names no device."""
    name = os.environ.get("KTUNE_DEVICE_NAME", "").strip()
    if name:
        return name
    torch = sys.modules.get("torch")  # only when already imported: importing it takes seconds
    try:
        if torch is not None and torch.cuda.is_available():
            return str(torch.cuda.get_device_name(index))
    except Exception:
        pass
    cupy = sys.modules.get("cupy")
    try:
        if cupy is not None:
            gpu = cupy.cuda.runtime.getDeviceProperties(index)["name"]
            return gpu.decode() if isinstance(gpu, bytes) else str(gpu)
    except Exception:
        pass
    return _cpu_model_name(cpuinfo) or f"{platform.machine() or 'unknown'} CPU"
