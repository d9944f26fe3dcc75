#!/usr/bin/env python3
"""python/ktune_worker without ktune: it exits when its stdin closes even while a measure hangs in
a kernel; a kernel's exception reaches ktune with its traceback, bounded; its device is named by
what it is (never "x86-64"); the README's example is a working worker whose every answer the
protocol's schema accepts; the device's conditions (gpu_conditions, NVML's reader) travel in measured
metrics and sampled answers, from a reader the test injects (no GPU needed). Every wait is bounded,
and a worker left running is killed."""
import contextlib
import csv
import ctypes
import io
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import types
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import ktune_worker as kw  # noqa: E402
from ktune_worker import gpu_conditions  # noqa: E402

HELLO = {"type": "hello", "protocol": 1, "ktune": "test"}


def problem(n=8):
    return {"family": "raw", "key": f"n={n}", "fields": {"n": n}}


class Worker:
    """A worker process driven line by line; killed on exit of the `with` block if still running."""

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), **(env or {})},
                                     text=True)
        self.sent = []
        self.early = []  # lines read by until(), before finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()

    def send(self, message):
        self.sent.append(message)
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def until(self, rid):
        """Reads the worker's lines up to its answer to request `rid` (kept for finish())."""
        for line in self.proc.stdout:
            self.early.append(line)
            if json.loads(line).get("id") == rid:
                return

    def finish(self, timeout=60):
        """Every line the worker wrote, once it has exited (bounded). A worker drops queued work
        when its input closes (ktune is gone), so after a shutdown stdin stays open until the bye,
        as ktune keeps it: closing it at once raced the worker on a busy machine."""
        lines = []
        if self.sent and self.sent[-1].get("type") == "shutdown":
            def read_to_bye():
                for line in self.proc.stdout:
                    lines.append(line)
                    if json.loads(line).get("type") == "bye":
                        return
            reader = threading.Thread(target=read_to_bye, daemon=True)
            reader.start()
            reader.join(timeout)
        out, self.stderr = self.proc.communicate(timeout=timeout)
        return [json.loads(line) for line in self.early + lines + out.splitlines()]


def wait_for(path, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not os.path.exists(path):
        time.sleep(0.05)
    return os.path.exists(path)


class ExitOnEof(unittest.TestCase):
    def test_exits_when_stdin_closes_during_a_stuck_measure(self):
        with tempfile.TemporaryDirectory() as tmp:
            pids = os.path.join(tmp, "pids")
            argv = [sys.executable, os.path.join(ROOT, "tests", "cli", "hung_worker.py")]
            with Worker(argv, {"HUNG_PIDS": pids, "HUNG_KIND": "kw"}) as w:
                w.send(HELLO)
                w.send({"type": "measure", "id": 1, "family": "raw", "problem": problem(), "config": {"x": 1},
                        "seed": 0})
                self.assertTrue(wait_for(pids + ".measuring"), "the measure never began")
                w.proc.stdin.close()
                try:
                    w.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.fail("ktune_worker still runs 15 s after its stdin closed, its measure stuck in a kernel")


KERNELS = textwrap.dedent(r'''
    import sys
    import ktune_worker as kw

    # A chain of 60 distinct functions (Python folds repeated frames of one function into a line).
    exec(compile("def deep0():\n    raise ZeroDivisionError('kernel fault at the bottom')\n" +
                 "".join(f"def deep{i}():\n    return deep{i - 1}()\n" for i in range(1, 60)), "chain.py", "exec"))

    class OutOfResources(Exception):  # what Triton raises at a launch that asks for too much shared memory
        pass

    def too_big():
        raise OutOfResources("out of resource: shared memory, Required: 270368, Hardware limit: 232448")

    def build(config, problem, inputs):
        if config["x"] == 2:
            raise ValueError("no such tile: x=2")
        if config["x"] == 3:
            return lambda: deep59()
        if config["x"] == 4:
            return too_big
        return lambda: [1.0]

    kw.serve(kw.Family(name="raw", key_fields=["n"], space={"x": [1, 2, 3, 4]}, inputs=lambda p, s: None,
                       reference=lambda p, i: [1.0], build=build, timer=lambda run, n: 1000.0))
''')


def measure(rid, x, **more):
    return {"type": "measure", "id": rid, "family": "raw", "problem": problem(), "config": {"x": x}, "seed": 0, **more}


class Settle(unittest.TestCase):
    """After its device sat idle, a config warms up settle_ms (at most half the time cap) before it is
    timed, as ktune's own measurer does; straight after another config it does not."""

    def test_a_config_after_an_idle_gap_warms_up_settle_ms(self):
        calls = []

        def timer(run, launches):
            calls.append(time.monotonic())
            time.sleep(0.002)
            return 2e6

        def warmup(samples):
            return calls[len(calls) - len(samples)] - calls[0]

        settings = {"warmup_ms": 0.0, "settle_ms": 60.0, "min_samples": 3, "max_samples": 3}
        time.sleep(0.15)
        status, _, samples = kw._measure(lambda: None, timer, settings, None)
        self.assertEqual(status, "ok")
        self.assertGreaterEqual(warmup(samples), 0.06)
        calls.clear()  # straight after: nowhere near a 20 s settle
        status, _, samples = kw._measure(lambda: None, timer, dict(settings, settle_ms=20000.0,
                                                                   max_ms_per_config=60000.0), None)
        self.assertLess(warmup(samples), 10.0)
        time.sleep(0.15)  # idle again, with a cap of 100 ms: half of it
        calls.clear()
        status, _, samples = kw._measure(lambda: None, timer, dict(settings, settle_ms=20000.0,
                                                                   max_ms_per_config=100.0), None)
        self.assertEqual(status, "ok")
        self.assertGreaterEqual(warmup(samples), 0.05)


class Tracebacks(unittest.TestCase):
    def answers(self, *steps):
        """{id: answer} of KERNELS' worker to the hello, then `steps` (a message, or an id whose answer is
        read before going on), then a shutdown."""
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "kernels.py")
            with open(script, "w") as f:
                f.write(KERNELS)
            with Worker([sys.executable, script]) as w:
                w.send(HELLO)
                for step in steps:
                    if isinstance(step, int):
                        w.until(step)
                    else:
                        w.send(step)
                w.send({"type": "shutdown", "id": 99})
                return {m.get("id"): m for m in w.finish()}

    def test_a_kernels_exception_comes_with_its_traceback_bounded(self):
        # A crashed measure ends the worker at once (ktune starts a fresh one): a prepare still
        # building on another thread would lose its answer, so it is read first.
        answers = self.answers({"type": "prepare", "id": 1, "family": "raw", "problem": problem(), "config": {"x": 2},
                                "seed": 0}, 1, measure(2, 3))
        build, run = answers[1], answers[2]
        self.assertEqual(build["status"], "compile_error")
        self.assertEqual(build["message"].split("\n")[0], "ValueError: no such tile: x=2")
        self.assertIn("Traceback (most recent call last)", build["message"])
        self.assertRegex(build["message"], r'kernels\.py", line \d+, in build')
        self.assertNotIn("ktune_worker", build["message"])  # the kernel's frames, not the package's
        self.assertEqual(run["status"], "crashed")
        self.assertEqual(run["message"].split("\n")[0], "ZeroDivisionError: kernel fault at the bottom")
        self.assertIn("in deep0", run["message"])
        self.assertIn("lines left out", run["message"])  # 60 frames deep: cut, not a page of them
        self.assertLess(len(run["message"]), 5000)

    def test_a_config_the_device_cannot_launch_is_a_launch_error_and_the_worker_lives_on(self):
        answers = self.answers(measure(1, 4), measure(2, 1, validate_only=True))
        self.assertEqual(answers[1]["status"], "launch_error", answers[1])
        self.assertEqual(answers[1]["message"].split("\n")[0],
                         "OutOfResources: out of resource: shared memory, Required: 270368, Hardware limit: 232448")
        self.assertEqual(answers[2]["type"], "measured", answers[2])  # the same process answered the next one
        self.assertEqual(answers[99]["type"], "bye")


class DeviceName(unittest.TestCase):
    def setUp(self):
        self.saved = {k: sys.modules.get(k) for k in ("torch", "cupy")}
        self.env = os.environ.pop("KTUNE_DEVICE_NAME", None)

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        if self.env is not None:
            os.environ["KTUNE_DEVICE_NAME"] = self.env

    def cpuinfo(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix="cpuinfo", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_the_cpu_model_names_a_cpu(self):
        for k in ("torch", "cupy"):
            sys.modules.pop(k, None)
        info = self.cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n"
                            "processor\t: 1\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n")
        self.assertEqual(kw.default_device_name(0, info), "AMD EPYC 7B13 64-Core Processor")
        arm = self.cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n")
        self.assertEqual(kw.default_device_name(0, arm), "Arm CPU implementer 0x41 part 0xd0c")

    def test_an_imported_torch_names_the_gpu(self):
        cuda = types.SimpleNamespace(is_available=lambda: True, get_device_name=lambda i: f"NVIDIA H100 80GB HBM3 #{i}")
        sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)
        self.assertEqual(kw.default_device_name(1, self.cpuinfo("model name\t: Some CPU\n")), "NVIDIA H100 80GB HBM3 #1")

    def test_the_environment_names_it_first(self):
        os.environ["KTUNE_DEVICE_NAME"] = "Lab Box 3"
        try:
            self.assertEqual(kw.default_device_name(0, self.cpuinfo("model name\t: Some CPU\n")), "Lab Box 3")
        finally:
            del os.environ["KTUNE_DEVICE_NAME"]

    def test_with_nothing_to_go_by_it_is_not_a_bare_architecture(self):
        for k in ("torch", "cupy"):
            sys.modules.pop(k, None)
        name = kw.default_device_name(0, os.path.join(tempfile.gettempdir(), "no-such-cpuinfo"))
        self.assertTrue(name.endswith(" CPU"), name)

    def test_the_hello_names_the_default_device(self):
        for k in ("torch", "cupy"):
            sys.modules.pop(k, None)
        with Worker([sys.executable, "-c", KERNELS]) as w:
            w.send(HELLO)
            w.send({"type": "shutdown", "id": 1})
            hello = w.finish()[0]
        self.assertEqual(hello["devices"][0]["name"], kw.default_device_name(0))


class GpuConditionsTest(unittest.TestCase):
    """python/ktune_worker/gpu_conditions.py (which the bench scripts import too): medians and the fraction
    held by a limit, from a reader of the test's making; torch's device found by its PCI bus id."""

    def test_summary_of_readings(self):
        readings = [(1980, 350.0, 0x1),  # idle: not a limit
                    (1500, 700.2, 0x4),  # SW power cap
                    (1410, 699.0, 0x4 | 0x1000),
                    (1425, 690.0, 0x80),  # HW power brake
                    (None, None, None)]  # a reading NVML refused: left out
        self.assertEqual(gpu_conditions.summarize(readings),
                         {"sm_clock_mhz": 1462.5, "power_w": 694.5, "clock_limited": 0.75})
        for bit in (0x4, 0x8, 0x20, 0x40, 0x80):
            self.assertEqual(gpu_conditions.summarize([(1, 1.0, bit)])["clock_limited"], 1.0, hex(bit))
        for bit in (0x1, 0x2, 0x10, 0x100):  # idle, application clocks, sync boost, display clocks
            self.assertEqual(gpu_conditions.summarize([(1, 1.0, bit)])["clock_limited"], 0.0, hex(bit))
        # a key none of the readings gave is absent (a GPU without power readings), all of them without readings
        self.assertEqual(gpu_conditions.summarize([(1400, None, 0x4), (1600, None, 0)]),
                         {"sm_clock_mhz": 1500.0, "clock_limited": 0.5})
        self.assertEqual(gpu_conditions.summarize([]), {})

    def test_sampling_reads_on_a_thread_while_the_block_runs(self):
        readings = itertools.chain([(1400, 700.0, 0x4), (1500, 690.0, 0x4), (1600, 680.0, 0)],
                                   itertools.repeat((1700, 600.0, 0)))
        threads, enough = set(), threading.Event()

        def read():
            threads.add(threading.get_ident())
            r = next(readings)
            if r[0] == 1700:  # the three readings above are in: the block can end
                enough.set()
            return r
        with gpu_conditions.sampling(read, period_s=0.001) as conditions:
            self.assertEqual(conditions, {})  # filled on exit
            self.assertTrue(enough.wait(10))
        self.assertNotIn(threading.get_ident(), threads)
        self.assertGreaterEqual(conditions["sm_clock_mhz"], 1500.0)
        self.assertTrue(0 < conditions["clock_limited"] < 1, conditions)
        self.assertEqual(set(conditions), {"sm_clock_mhz", "power_w", "clock_limited"})
        # a block shorter than the period is read as it starts and as it ends
        ends = iter([(1425, 688.1, 0x4), (1475, 650.0, 0)])
        with gpu_conditions.sampling(lambda: next(ends), period_s=10) as conditions:
            pass
        self.assertEqual(conditions, {"sm_clock_mhz": 1450.0, "power_w": 669.0, "clock_limited": 0.5})
        with gpu_conditions.sampling(None) as conditions:
            pass
        self.assertEqual(conditions, {})

    def test_bus_id_is_the_form_nvml_finds_a_device_by(self):
        self.assertEqual(gpu_conditions.bus_id(0, 0x1b, 0), "00000000:1b:00.0")
        self.assertEqual(gpu_conditions.bus_id(0x10002, 0xc3, 0x1f), "00010002:c3:1f.0")

    def test_without_nvml_it_says_why_and_samples_nothing(self):
        gpu = gpu_conditions.Device("00000000:1b:00.0", library="libnvidia-ml-absent-for-the-test.so.1")
        self.assertIsNone(gpu.read)
        self.assertIn("no NVML", gpu.why)
        self.assertNotIn("\n", gpu.why)
        with gpu.sampling() as conditions:
            pass
        self.assertEqual(conditions, {})
        # a torch without PCI bus ids in its device properties: the caller's reason is kept
        self.assertEqual(gpu_conditions.Device(None, why="no pci_bus_id").why, "no pci_bus_id")
        self.assertIn("PCI bus id", gpu_conditions.Device(None).why)

    def test_the_default_library_without_nvml(self):
        try:
            ctypes.CDLL(gpu_conditions.LIBRARY)
        except OSError:
            pass
        else:
            self.skipTest(f"{gpu_conditions.LIBRARY} loads on this host: the case without NVML cannot be seen here")
        gpu = gpu_conditions.Device("00000000:1b:00.0")
        self.assertIsNone(gpu.read)
        self.assertTrue(gpu.why.startswith("no NVML"), gpu.why)
        with gpu.sampling() as conditions:
            pass
        self.assertEqual(conditions, {})


    def fake_torch(self, hip=None, available=True, properties=None):
        """A torch in sys.modules (restored after the test) that sees one CUDA device, current device 1."""
        saved = sys.modules.get("torch")
        self.addCleanup(lambda: sys.modules.__setitem__("torch", saved) if saved else sys.modules.pop("torch", None))
        asked = []

        def props(i):
            asked.append(i)
            return properties or types.SimpleNamespace(pci_domain_id=0, pci_bus_id=0x1b, pci_device_id=0)
        sys.modules["torch"] = types.SimpleNamespace(
            __version__="2.9-test", version=types.SimpleNamespace(hip=hip),
            cuda=types.SimpleNamespace(is_available=lambda: available, current_device=lambda: 1,
                                       get_device_properties=props))
        return asked

    def test_torch_names_its_current_device_by_its_pci_bus_id(self):
        asked = self.fake_torch()
        self.assertEqual(gpu_conditions.torch_bus_id(), ("00000000:1b:00.0", None))
        self.assertEqual(asked, [1])  # the current device
        self.assertEqual(gpu_conditions.torch_bus_id(3)[0], "00000000:1b:00.0")
        self.assertEqual(asked, [1, 3])

    def test_without_an_nvidia_gpu_in_torch_there_is_no_device_and_no_error(self):
        sys.modules.pop("torch", None)
        if "torch" in sys.modules:
            self.skipTest("torch is imported")
        self.assertEqual(gpu_conditions.torch_bus_id(), (None, "torch is not imported"))
        self.fake_torch(hip="6.2")
        pci, why = gpu_conditions.torch_bus_id()
        self.assertIsNone(pci)
        self.assertIn("ROCm", why)
        self.fake_torch(available=False)
        self.assertEqual(gpu_conditions.torch_bus_id(), (None, "torch sees no CUDA device"))
        self.fake_torch(properties=types.SimpleNamespace(name="old torch"))
        self.assertIn("no PCI bus id", gpu_conditions.torch_bus_id()[1])
        self.assertIsNone(gpu_conditions.torch_device().read)

        def broken(i):
            raise RuntimeError("CUDA error: initialization error\nmore")
        self.fake_torch()
        sys.modules["torch"].cuda.get_device_properties = broken
        pci, why = gpu_conditions.torch_bus_id()
        self.assertIsNone(pci)
        self.assertEqual(why, "torch could not name its device (RuntimeError: CUDA error: initialization error")

    def test_a_reader_that_raises_ends_the_blocks_readings(self):
        calls = []

        def read():
            calls.append(1)
            if len(calls) > 1:
                raise OSError("the driver went away")
            return (1500, 600.0, 0)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with gpu_conditions.sampling(read, period_s=0.001) as conditions:
                end = time.monotonic() + 10
                while len(calls) < 2 and time.monotonic() < end:
                    time.sleep(0.001)
        self.assertEqual(conditions, {"sm_clock_mhz": 1500.0, "power_w": 600.0, "clock_limited": 0.0})
        self.assertEqual(len(calls), 2)
        self.assertEqual(err.getvalue(), "gpu_conditions: the reader raised OSError: the driver went away; "
                                         "no more readings in this block\n")


def attention(**sharding):
    """A Family of attention's key fields (never served: its callables are not called)."""
    return kw.Family(name="attn", key_fields=["q_heads", "kv_heads", {"name": "dtype", "numeric": False}],
                     space={"BLOCK": [16]}, inputs=None, reference=None, build=None, **sharding)


HEADS = ["q_heads", {"name": "kv_heads", "at_least_one": True}]
GQA = [{"expr": "mod(q_heads, kv_heads) == 0 && dtype != \"f8\"", "description": "GQA"}]


class Sharding(unittest.TestCase):
    def test_splits_and_rules_travel_with_the_kernel_specs_names(self):
        d = attention(tp_head_fields=HEADS, shape_rules=GQA, tp_out_field="q_heads", workload_rules_since=2).to_json()
        self.assertEqual(d["tp_head_fields"], HEADS)
        self.assertEqual(d["shape_rules"], GQA)
        self.assertEqual(d["tp_out_field"], "q_heads")
        self.assertEqual(d["workload_rules_since"], 2)
        self.assertNotIn("tp_in_field", d)
        import validate_transcript as vt
        with open(os.path.join(ROOT, "docs", "worker-protocol.schema.json"), encoding="utf-8") as f:
            whole, one = vt.validators(json.load(f))
        hello = {"type": "hello", "protocol": 1, "worker": "t", "backend": "t",
                 "devices": [{"backend": "t", "name": "x"}], "families": [d]}
        self.assertEqual(vt.check(hello, "ktune", whole, one), [])

    def test_a_family_without_them_says_nothing_of_them(self):
        d = attention().to_json()
        for key in ("tp_out_field", "tp_in_field", "tp_head_fields", "shape_rules", "workload_rules_since"):
            self.assertNotIn(key, d)

    def test_malformed_fields_are_refused_naming_the_family_and_the_field(self):
        cases = [
            (dict(tp_out_field="dtype"), "Family 'attn': tp_out_field: 'dtype' is not a numeric key field "
                                         "(those are: q_heads, kv_heads)"),
            (dict(tp_in_field="heads"), "tp_in_field: 'heads' is not a numeric key field"),
            (dict(tp_head_fields=["q_heads", {"name": "kv"}]), "tp_head_fields[1]: 'kv' is not a numeric key field"),
            (dict(tp_head_fields=[{"name": "kv_heads", "at_least_one": 1}]),
             "tp_head_fields[0].at_least_one: expected True or False, got 1"),
            (dict(tp_head_fields=[{"name": "kv_heads", "at_least": True}]), "tp_head_fields[0]: expected {'name'"),
            (dict(tp_head_fields="q_heads"), "tp_head_fields: expected a list of key field names"),
            (dict(shape_rules=["q_heads > 1"]), "shape_rules[0]: expected {'expr': 'a ktune expression'"),
            (dict(shape_rules=[{"expr": "mod(q_heads, groups) == 0"}]),
             "shape_rules[0].expr 'mod(q_heads, groups) == 0': 'groups' is not a key field"),
            (dict(workload_rules_since=0), "workload_rules_since: expected a version of ktune's workload rules"),
            (dict(workload_rules_since="2"), "workload_rules_since: expected a version"),
        ]
        for sharding, message in cases:
            with self.subTest(**{k: repr(v) for k, v in sharding.items()}):
                with self.assertRaises(ValueError) as e:
                    attention(**sharding)
                self.assertIn(message, str(e.exception))

    def test_rules_may_use_functions_literals_and_numbers(self):
        rule = {"expr": "max(q_heads, 2) <= 1e4 && is_pow2(kv_heads) && dtype == 'bf16' || true", "description": ""}
        self.assertEqual(attention(shape_rules=[rule]).to_json()["shape_rules"], [rule])

    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_ktune_tunes_the_local_shape_and_checks_the_rules(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "attn.py")
            with open(script, "w") as f:
                f.write("import ktune_worker as kw\n"
                        f"kw.serve(kw.Family(name='attn', key_fields=['q_heads', 'kv_heads'], space={{'BLOCK': [16, 32]}},"
                        f" tp_head_fields={HEADS!r}, shape_rules=[{{'expr': 'mod(q_heads, kv_heads) == 0', "
                        "'description': 'q_heads must be a multiple of kv_heads'}], inputs=None, reference=None, "
                        "build=None), backend='attn')\n")

            def tune(*args):
                return subprocess.run([os.environ["KTUNE_CLI"], "tune", "--worker", f"{sys.executable} {script}",
                                       "--dry-run", "--output-dir", tmp, *args], capture_output=True, text=True,
                                      timeout=120, env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"),
                                                        "KTUNE_DEVICE_NAME": "test"})
            split = tune("--shape", "q_heads=32 kv_heads=4", "--tp-size", "8")
            self.assertEqual(split.returncode, 0, split.stderr)
            self.assertIn("q_heads=4,kv_heads=1,tp=8/heads: 2 configs", split.stdout)
            bad = tune("--shape", "q_heads=32 kv_heads=6")
            self.assertEqual(bad.returncode, 2, bad.stdout)
            self.assertIn("q_heads=32, kv_heads=6: q_heads must be a multiple of kv_heads", bad.stderr)



def worker_script(tmp, name, source):
    """The worker `source` written into tmp as NAME_worker.py: its path."""
    script = os.path.join(tmp, name + "_worker.py")
    with open(script, "w") as f:
        f.write(source)
    return script


def schema_validators():
    """(whole transcript, one message) validators of docs/worker-protocol.schema.json."""
    import validate_transcript as vt
    with open(os.path.join(ROOT, "docs", "worker-protocol.schema.json"), encoding="utf-8") as f:
        return vt.validators(json.load(f))


def tune_with_worker(source, tmp, run_name, args, env=None):
    """`ktune tune --worker` of the worker `source` (written into tmp) on n=8, three samples a
    config, the run saved as tmp/run_name: the finished process."""
    script = worker_script(tmp, run_name, source)
    return subprocess.run([os.environ["KTUNE_CLI"], "tune", "--worker", f"{sys.executable} {script}",
                           "--shape", "n=8", "--output-dir", tmp, "--run-name", run_name, "--warmup-ms", "0",
                           "--min-samples", "3", "--max-samples", "3", *args],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), "KTUNE_DEVICE_NAME": "test",
                               **(env or {})})

METRICS = textwrap.dedent(r'''
    import ktune_worker as kw

    def inputs(problem, seed, key):  # asks for the key: kernel specs seed their arguments from it
        return {"key": key}

    def metrics(problem, x, samples, settings):
        if problem["n"] == 3:
            return {"device": 1.0}
        if problem["n"] == 4:
            return {"speedup": float("nan")}
        return {"speedup": 2000.0 / min(samples), "key_chars": len(x["key"]), "min_samples": settings["min_samples"]}

    kw.serve(kw.Family(name="raw", key_fields=["n"], space={"x": [1, 2]}, inputs=inputs, reference=lambda p, i: [1.0],
                       build=lambda c, p, i: (lambda: [1.0]), timer=lambda run, n: 1000.0, metrics=metrics))
''')


THREAD_INIT = textwrap.dedent(r'''
    import threading
    import ktune_worker as kw

    # As CUDA's current device: each thread's own, set by thread_init, 0 on a thread it never ran on.
    local = threading.local()

    def on(what):
        if getattr(local, "device", 0) != 1:
            raise RuntimeError(f"{what} ran on a thread whose device is not the worker's")

    def build(config, problem, inputs):
        on("build")
        return lambda: [1.0]

    def timer(run, n):
        on("the timer")
        return 1000.0

    kw.serve(kw.Family(name="raw", key_fields=["n"], space={"x": [1, 2]}, inputs=lambda p, s: {},
                       reference=lambda p, i: [1.0], build=build, timer=timer),
             thread_init=lambda: setattr(local, "device", 1))
''')


class ThreadInit(unittest.TestCase):
    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_every_thread_that_prepares_or_measures_is_set_up_first(self):
        """A worker's prepares and measures run on pool threads: a device selected on the serving
        thread alone (torch.cuda.set_device) would not reach them; thread_init does."""
        with tempfile.TemporaryDirectory() as tmp:
            run = tune_with_worker(THREAD_INIT, tmp, "t", ["-q"])
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            with open(os.path.join(tmp, "t", "trials.csv"), newline="") as f:
                self.assertEqual([r["status"] for r in csv.DictReader(f)], ["ok", "ok"])


class Metrics(unittest.TestCase):
    SETTINGS = {"method": "amortized", "warmup_ms": 0.0, "min_samples": 3, "max_samples": 3, "min_sample_ms": 0.1,
                "max_ms_per_config": 2000.0}

    def measure(self, n, key=None):
        """The answers to a measure of problem n, and the schema's complaints about them."""
        import validate_transcript as vt
        whole, one = schema_validators()
        with tempfile.TemporaryDirectory() as tmp:
            script = worker_script(tmp, "metrics", METRICS)
            with Worker([sys.executable, script]) as w:
                w.send(HELLO)
                p = {"family": "raw", "key": key or f"n={n}", "fields": {"n": n}}
                w.send({"type": "measure", "id": 1, "family": "raw", "problem": p, "config": {"x": 1}, "seed": 0,
                        "tolerance": {"atol": 0.0, "rtol": 0.0, "max_mismatch_fraction": 0.0},
                        "settings": self.SETTINGS, "best_median_ns": None, "validate_only": False})
                w.send({"type": "shutdown", "id": 2})
                answers = w.finish()
        return answers[1], [e for m in answers for e in vt.check(m, "ktune", whole, one)]

    def test_a_familys_metrics_travel_in_the_measured_answer(self):
        answer, complaints = self.measure(8, key="n=8,tp=2/out")
        self.assertEqual(complaints, [])
        self.assertEqual(answer["type"], "measured", answer)
        self.assertEqual(answer["metrics"], {"speedup": 2.0, "key_chars": 12.0, "min_samples": 3.0})

    def test_a_metric_ktune_would_refuse_crashes_the_trial_naming_it(self):
        for n, message in ((3, "metrics returned the name 'device'"), (4, "metrics returned speedup=nan")):
            with self.subTest(n=n):
                answer, _ = self.measure(n)
                self.assertEqual((answer["type"], answer["status"]), ("failed", "crashed"))
                self.assertIn(message, answer["message"])

    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_ktune_records_them_as_the_trials_metrics(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = tune_with_worker(METRICS, tmp, "m", ["-q"])
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(os.path.join(tmp, "m", "trials.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 2)
        for row in rows:
            self.assertEqual(json.loads(row["metrics"]), {"key_chars": 3, "min_samples": 3, "speedup": 2})


CONDITIONS = textwrap.dedent(r"""
    import os
    import sys
    import types
    import ktune_worker as kw

    MODE = os.environ["CONDITIONS_MODE"]
    if MODE in ("torch", "rocm"):  # a torch that sees a GPU (whose bus id NVML cannot find: no GPU here)
        props = types.SimpleNamespace(pci_domain_id=0xfff0, pci_bus_id=0xfe, pci_device_id=0x1f)
        sys.modules["torch"] = types.SimpleNamespace(
            __version__="2.9-test", version=types.SimpleNamespace(hip="6.2" if MODE == "rocm" else None),
            cuda=types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 0,
                                       get_device_name=lambda i: "NVIDIA Test GPU", get_device_properties=lambda i: props))

    def reader():  # what NVML reads of an H100 held at its power cap
        return (1410, 695.5, 0x4)

    def metrics(problem, inputs, samples, settings):
        if problem["n"] == 5:  # a family's own number under a condition's name
            return {"speedup": 2.0, "sm_clock_mhz": 1980.0}
        return {"speedup": 2.0} if problem["n"] == 6 else {}

    conditions = {"reader": reader, "negative": lambda: (1410, -5.0, 0), "off": False}.get(MODE)
    kw.serve(kw.Family(name="raw", key_fields=["n"], space={"x": [1, 2]}, inputs=lambda p, s: None,
                       reference=lambda p, i: [1.0], build=lambda c, p, i: (lambda: [1.0]),
                       timer=lambda run, n: 1000.0, metrics=metrics, conditions=conditions))
""")


class Conditions(unittest.TestCase):
    """The device's conditions (SM clock, power, clock limits) while ktune_worker times: a measured
    answer's metrics and a sampled answer's conditions, from a reader the family gives (no GPU here)."""

    SETTINGS = Metrics.SETTINGS
    READ = {"sm_clock_mhz": 1410.0, "power_w": 695.5, "clock_limited": 1.0}

    def answers(self, mode, n=8, crashes=False):
        """{id: answer} to a measure (1) and a sample (2) of problem n, the schema's complaints about every
        message both ways, and the worker's stderr. crashes: the measure alone (a crashed trial ends the worker)."""
        import validate_transcript as vt
        whole, one = schema_validators()
        with tempfile.TemporaryDirectory() as tmp:
            script = worker_script(tmp, "conditions", CONDITIONS)
            with Worker([sys.executable, script], {"CONDITIONS_MODE": mode}) as w:
                w.send(HELLO)
                fields = {"family": "raw", "problem": {"family": "raw", "key": f"n={n}", "fields": {"n": n}}, "seed": 0,
                          "config": {"x": 1}}
                w.send({"type": "measure", "id": 1, **fields,
                        "tolerance": {"atol": 0.0, "rtol": 0.0, "max_mismatch_fraction": 0.0},
                        "settings": self.SETTINGS, "best_median_ns": None, "validate_only": False})
                if not crashes:
                    w.until(1)
                    w.send({"type": "sample", "id": 2, **fields, "launches": 2, "method": "amortized",
                            "rotate_buffers": False, "timeout_ms": 1000.0})
                    w.send({"type": "shutdown", "id": 3})
                answers = w.finish()  # every stdout line parses: nothing but the protocol there
        complaints = [e for to, ms in (("worker", w.sent), ("ktune", answers)) for m in ms
                      for e in vt.check(m, to, whole, one)]
        return {m.get("id"): m for m in answers[1:]}, complaints, w.stderr

    def test_a_readers_conditions_travel_in_measured_metrics_and_sampled_answers(self):
        answers, complaints, _ = self.answers("reader")
        self.assertEqual(complaints, [])
        self.assertEqual(answers[1]["type"], "measured", answers[1])
        self.assertEqual(answers[1]["metrics"], self.READ)
        self.assertEqual(answers[2]["type"], "sampled", answers[2])
        self.assertEqual(answers[2]["conditions"], self.READ)
        self.assertEqual(answers[3]["type"], "bye")
        # beside a family's own metrics
        answers, complaints, _ = self.answers("reader", n=6)
        self.assertEqual(complaints, [])
        self.assertEqual(answers[1]["metrics"], {"speedup": 2.0, **self.READ})

    def test_without_a_reader_neither_appears_and_nothing_is_said(self):
        for mode in ("none", "off", "rocm"):  # no torch; conditions=False; torch on an AMD GPU
            with self.subTest(mode=mode):
                answers, complaints, stderr = self.answers(mode)
                self.assertEqual(complaints, [])
                self.assertEqual(answers[1]["type"], "measured", answers[1])
                self.assertNotIn("metrics", answers[1])
                self.assertEqual(answers[2]["type"], "sampled", answers[2])
                self.assertNotIn("conditions", answers[2])
                self.assertNotIn("conditions", stderr)

    def test_torchs_nvidia_gpu_without_nvml_gives_none_and_says_why_on_stderr(self):
        answers, complaints, stderr = self.answers("torch")
        self.assertEqual(complaints, [])
        self.assertEqual(answers[1]["type"], "measured", answers[1])
        self.assertNotIn("metrics", answers[1])
        self.assertNotIn("conditions", answers[2])
        # torch's current device, by its PCI bus id; once, not at every sample
        self.assertEqual(stderr.count("ktune_worker: no device conditions (SM clock, power) for raw from the GPU at "
                                      "PCI bus id 0000fff0:fe:1f.0: "), 1, stderr)

    def test_a_family_metric_named_as_a_condition_crashes_the_trial_naming_it(self):
        for mode in ("reader", "none"):  # whether or not conditions are read: the names are ktune_worker's
            with self.subTest(mode=mode):
                answers, _, _ = self.answers(mode, n=5, crashes=True)
                self.assertEqual((answers[1]["type"], answers[1]["status"]), ("failed", "crashed"), answers[1])
                self.assertIn("metrics returned the name 'sm_clock_mhz'", answers[1]["message"])
                self.assertIn("Family.conditions", answers[1]["message"])

    def test_a_reading_ktune_would_refuse_crashes_the_trial(self):
        answers, _, _ = self.answers("negative", crashes=True)
        self.assertEqual((answers[1]["type"], answers[1]["status"]), ("failed", "crashed"), answers[1])
        self.assertIn("the conditions reader gave power_w=-5.0", answers[1]["message"])

    def test_a_family_says_where_its_conditions_come_from(self):
        def family(conditions):
            return kw.Family(name="f", key_fields=["n"], space={"x": [1]}, inputs=None, reference=None, build=None,
                             conditions=conditions)
        for good in (None, False, "00000000:1b:00.0", "0000:c3:1f.0", lambda: (1, 1.0, 0)):
            family(good)
        for bad in (True, "GPU-6f1e", 0, "0:1b:00.0"):
            with self.subTest(conditions=bad):
                with self.assertRaises(ValueError) as e:
                    family(bad)
                self.assertIn("Family 'f': conditions: expected None", str(e.exception))
        self.assertNotIn("conditions", family(None).to_json())

    def test_reads_run_on_a_thread_while_the_samples_run_not_the_warm_up(self):
        timed, reads, threads = [], [], set()

        def timer(run, launches):
            timed.append(launches)
            time.sleep(0.002)
            return 2e6

        def read():
            threads.add(threading.get_ident())
            reads.append(len(timed))  # how many samples had begun by this reading
            return (1500, 600.0, 0x20)
        got = {}
        settings = {"warmup_ms": 30.0, "settle_ms": 0.0, "min_samples": 5, "max_samples": 5, "noise_target": 0.0}
        status, _, samples = kw._measure(lambda: None, timer, settings, None, read, got)
        self.assertEqual((status, len(samples)), ("ok", 5))
        self.assertEqual(got, {"sm_clock_mhz": 1500.0, "power_w": 600.0, "clock_limited": 1.0})
        self.assertNotIn(threading.get_ident(), threads)
        self.assertGreaterEqual(min(reads), len(timed) - len(samples))  # none before the warm-up's end
        self.assertGreaterEqual(len(reads), 2)

    @unittest.skipUnless(os.environ.get("KTUNE_CLI"), "KTUNE_CLI (the ktune CLI) is not set: ctest sets it")
    def test_ktune_records_them_beside_the_trials_and_the_winner(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = tune_with_worker(CONDITIONS, tmp, "c", [], {"CONDITIONS_MODE": "reader"})
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(os.path.join(tmp, "c", "trials.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            with open(os.path.join(tmp, "c", "results.json"), encoding="utf-8") as f:
                results = json.load(f)
        self.assertEqual(len(rows), 2)
        for row in rows:
            self.assertEqual(json.loads(row["metrics"]), {"sm_clock_mhz": 1410, "power_w": 695.5, "clock_limited": 1})
        best = results["results"][0]
        self.assertEqual(best["conditions"], self.READ)  # the winner's, from the re-measure's sampled answers
        self.assertEqual([r["conditions"] for r in best["remeasured"]], [self.READ] * 2)
        self.assertIn("at 1410 MHz, 696 W, clock limited", run.stdout)


class ReadmeExample(unittest.TestCase):
    def test_the_readmes_worker_answers_as_the_schema_says(self):
        import validate_transcript as vt
        with open(os.path.join(ROOT, "python", "ktune_worker", "README.md"), encoding="utf-8") as f:
            code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
        with open(os.path.join(ROOT, "docs", "worker-protocol.schema.json"), encoding="utf-8") as f:
            whole, one = vt.validators(json.load(f))
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "matmul_worker.py")
            with open(script, "w") as f:
                f.write(code)
            with Worker([sys.executable, script]) as w:
                w.send(HELLO)
                fields = {"family": "pymatmul", "problem": {"family": "pymatmul", "key": "n=8", "fields": {"n": 8}},
                          "seed": 0}
                config = {"block": 4, "transpose_b": True, "order": "ji"}
                w.send({"type": "prepare", "id": 1, **fields, "config": config})
                w.send({"type": "measure", "id": 2, **fields, "config": config,
                        "tolerance": {"atol": 1e-9, "rtol": 1e-9, "max_mismatch_fraction": 0.0},
                        "settings": {"method": "amortized", "warmup_ms": 1.0, "min_samples": 3, "max_samples": 5,
                                     "min_sample_ms": 0.5, "max_ms_per_config": 2000.0},
                        "best_median_ns": None, "validate_only": False})
                w.send({"type": "sample", "id": 3, **fields, "config": config, "launches": 2, "method": "amortized",
                        "rotate_buffers": False, "timeout_ms": 1000.0})
                w.send({"type": "shutdown", "id": 4})
                answers = w.finish()
        for to, messages in (("worker", w.sent), ("ktune", answers)):
            for m in messages:
                self.assertEqual(vt.check(m, to, whole, one), [], json.dumps(m)[:300])
        by_id = {m.get("id"): m for m in answers[1:]}
        self.assertEqual(answers[0]["families"][0]["name"], "pymatmul")
        self.assertEqual(by_id[1]["type"], "prepared")
        self.assertEqual(by_id[2]["type"], "measured", by_id[2])
        self.assertTrue(all(ns > 0 for ns in by_id[2]["samples_ns"]))
        self.assertEqual(by_id[3]["type"], "sampled")
        self.assertEqual(by_id[4]["type"], "bye")


if __name__ == "__main__":
    unittest.main(verbosity=2)
