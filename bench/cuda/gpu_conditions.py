#!/usr/bin/env python3
"""The conditions a GPU was timed under, as ktune records them beside each measurement in results.json
("conditions"): the median SM clock (sm_clock_mhz), the median board power (power_w) and the fraction
of readings in which a power or thermal limit held the clock down (clock_limited). An H100 at its
power cap drops from 1,980 to 1,400-1,600 MHz, so two times taken minutes apart can differ by ~10 %
for that alone: a baseline timed beside ktune's winners says its conditions too.

    gpu = gpu_conditions.Device(gpu_conditions.bus_id(domain, bus, device))
    with gpu.sampling() as conditions:
        ...                      # the timed calls
    print(conditions)            # {} where NVML was not there; gpu.why says why

Stdlib only (ctypes on libnvidia-ml.so.1, no pynvml): a bench host may lack the package."""
import contextlib
import ctypes
import statistics
import threading

LIBRARY = "libnvidia-ml.so.1"
NVML_CLOCK_SM = 1
# Clock event reasons that mean a limit held the clock down: SW power cap, HW slowdown, SW thermal,
# HW thermal, HW power brake. Idle (0x1), application clocks (0x2) and sync boost (0x10) are choices, not limits.
LIMITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def bus_id(domain, bus, device):
    """The PCI bus id NVML finds a device by, in nvmlPciInfo_t.busId's form (domain:bus:device.function)."""
    return "%08x:%02x:%02x.0" % (domain, bus, device)


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
    than reads between samples: the timed loop stays as it is, and ctypes releases the GIL in NVML."""
    out = {}
    if read is None:
        yield out
        return
    readings, stop = [], threading.Event()

    def loop():
        while True:
            readings.append(read())
            if stop.wait(period_s):
                readings.append(read())
                return

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
        # NVML stays initialised for the process: its timings run until it exits.

        def read():
            clock, power, reasons = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
            return (clock.value if nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM, ctypes.byref(clock)) == 0
                    else None,
                    power.value / 1000.0 if nvml.nvmlDeviceGetPowerUsage(handle, ctypes.byref(power)) == 0 else None,
                    reasons.value if reasons_of(handle, ctypes.byref(reasons)) == 0 else None)
        self.read = read

    def sampling(self, period_s=0.01):
        return sampling(self.read, period_s)
