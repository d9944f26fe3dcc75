#!/usr/bin/env python3
"""The conditions a GPU was timed under, as ktune records them beside each measurement in results.json
("conditions"): the median SM clock (sm_clock_mhz), the median board power (power_w) and the fraction
of readings in which a power or thermal limit held the clock down (clock_limited). An H100 at its
power cap drops from 1,980 to 1,400-1,600 MHz, so two times taken minutes apart can differ by ~10 %
for that alone: a time says its conditions too.

ktune_worker reads them while it times a family on an NVIDIA GPU (Family.conditions); the bench
scripts (bench/cuda/grouped_torch.py) read them beside their baselines:

    from ktune_worker import gpu_conditions
    gpu = gpu_conditions.Device(gpu_conditions.bus_id(domain, bus, device))  # or torch_device()
    with gpu.sampling() as conditions:
        ...                      # the timed calls
    print(conditions)            # {} where NVML was not there; gpu.why says why

Stdlib only (ctypes on libnvidia-ml.so.1, no pynvml): a worker's or a bench's host may lack the package."""
import contextlib
import ctypes
import statistics
import sys
import threading

LIBRARY = "libnvidia-ml.so.1"
NVML_CLOCK_SM = 1
# Clock event reasons that mean a limit held the clock down: SW power cap, HW slowdown, SW thermal,
# HW thermal, HW power brake. Idle (0x1), application clocks (0x2) and sync boost (0x10) are choices, not limits.
LIMITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def bus_id(domain, bus, device):
    """The PCI bus id NVML finds a device by, in nvmlPciInfo_t.busId's form (domain:bus:device.function)."""
    return "%08x:%02x:%02x.0" % (domain, bus, device)


def torch_bus_id(index=None):
    """(PCI bus id, None) of torch's CUDA device `index` (None: torch.cuda.current_device(), the
    calling thread's: torch keeps the current device per thread), when the caller already imported
    torch (this module never imports it: that takes seconds) and torch sees an NVIDIA GPU; else
    (None, why): no torch, no CUDA device, a ROCm build's AMD GPU, a torch without PCI ids. Never raises."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, "torch is not imported"
    try:
        if not torch.cuda.is_available():
            return None, "torch sees no CUDA device"
        if getattr(getattr(torch, "version", None), "hip", None):
            return None, "torch's GPU is an AMD one (ROCm): NVML reads NVIDIA GPUs only"
        p = torch.cuda.get_device_properties(torch.cuda.current_device() if index is None else index)
        if not hasattr(p, "pci_bus_id"):
            return None, f"torch {torch.__version__}'s device properties have no PCI bus id"
        return bus_id(p.pci_domain_id, p.pci_bus_id, p.pci_device_id), None
    except Exception as e:  # a torch that cannot say: no conditions, never a failed caller
        return None, f"torch could not name its device ({type(e).__name__}: {e})".splitlines()[0]


def torch_device(index=None):
    """The Device of torch_bus_id(index): its read is None and its why says why where there is none."""
    pci, why = torch_bus_id(index)
    return Device(pci, why=why)


def summarize(readings):
    """The conditions dict of (SM MHz, board W, clock event reasons) readings; an item NVML could not
    give is None and is left out, a key none of the readings gave is absent."""
    out = {}
    clocks = [r[0] for r in readings if r[0] is not None]
    powers = [r[1] for r in readings if r[1] is not None]
    reasons = [r[2] for r in readings if r[2] is not None]
    if clocks:
        out["sm_clock_mhz"] = float(statistics.median(clocks))
    if powers:
        out["power_w"] = round(float(statistics.median(powers)), 1)
    if reasons:
        out["clock_limited"] = round(sum(1 for r in reasons if r & LIMITS) / len(reasons), 3)
    return out


@contextlib.contextmanager
def sampling(read, period_s=0.01):
    """Calls read() on a thread every period_s while the block runs, and once more as it ends (so a block
    shorter than the period, as a few cold samples are, is read at both ends), and fills the dict it
    yields with summarize()'s conditions on exit; with read None the dict stays empty. A thread rather
    than reads between samples: the timed loop stays as it is, and ctypes releases the GIL in NVML.
    A read() that raises ends the readings of the block (one line on stderr says why); those taken
    before it still count."""
    out = {}
    if read is None:
        yield out
        return
    readings, stop = [], threading.Event()

    def loop():
        try:
            while True:
                readings.append(read())
                if stop.wait(period_s):
                    readings.append(read())
                    return
        except Exception as e:  # never a traceback from a thread: stdout or not, the timed block goes on
            why = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
            print(f"gpu_conditions: the reader raised {why}; no more readings in this block",
                  file=sys.stderr, flush=True)

    thread = threading.Thread(target=loop, daemon=True)  # daemon: a hung driver call cannot hold the exit
    thread.start()
    try:
        yield out
    finally:
        stop.set()
        thread.join(1.0)
        out.update(summarize(list(readings)))


class Device:
    """One GPU through NVML, found by its PCI bus id: CUDA numbers the devices otherwise than NVML under
    CUDA_VISIBLE_DEVICES (and by default), so an index would read another GPU. read() gives a reading
    for summarize(); read is None and why says why (one line) where there is no NVML, it would not
    start or it has no such device."""

    def __init__(self, pci_bus_id, why=None, library=LIBRARY):
        self.pci_bus_id, self.read, self.why = pci_bus_id, None, why
        if why is not None:
            return
        if pci_bus_id is None:
            self.why = "no PCI bus id to find the device by"
            return
        try:
            nvml = ctypes.CDLL(library)
        except OSError as e:
            self.why = f"no NVML ({library}: {e})"
            return
        try:
            nvml.nvmlErrorString.restype = ctypes.c_char_p
            text = (lambda rc: nvml.nvmlErrorString(rc).decode(errors="replace"))
            rc = nvml.nvmlInit_v2()
            if rc != 0:
                self.why = f"nvmlInit_v2 failed: {text(rc)}"
                return
            handle = ctypes.c_void_p()
            rc = nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle))
            if rc != 0:
                self.why = f"NVML has no device at PCI bus id {pci_bus_id}: {text(rc)}"
                return
            try:
                reasons_of = nvml.nvmlDeviceGetCurrentClocksEventReasons
            except AttributeError:  # drivers before R535 have only the older name
                reasons_of = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
            clock_of, power_of = nvml.nvmlDeviceGetClockInfo, nvml.nvmlDeviceGetPowerUsage
        except AttributeError as e:  # a library of that name without NVML's functions
            self.why = f"{library} lacks an NVML function ({e})"
            return
        # NVML stays initialised for the process: its timings run until it exits.

        def read():
            clock, power, reasons = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
            return (clock.value if clock_of(handle, NVML_CLOCK_SM, ctypes.byref(clock)) == 0 else None,
                    power.value / 1000.0 if power_of(handle, ctypes.byref(power)) == 0 else None,
                    reasons.value if reasons_of(handle, ctypes.byref(reasons)) == 0 else None)
        self.read = read

    def sampling(self, period_s=0.01):
        return sampling(self.read, period_s)
