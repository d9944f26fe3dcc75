#!/usr/bin/env python3
"""python/ktune_worker without ktune: it exits when its stdin closes even while a measure hangs in
a kernel; a kernel's exception reaches ktune with its traceback, bounded; its device is named by
what it is (never "x86-64"); the README's example is a working worker whose every answer the
protocol's schema accepts. Every wait is bounded, and a worker left running is killed."""
import csv
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
        out, _ = self.proc.communicate(timeout=timeout)
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


class Metrics(unittest.TestCase):
    SETTINGS = {"method": "amortized", "warmup_ms": 0.0, "min_samples": 3, "max_samples": 3, "min_sample_ms": 0.1,
                "max_ms_per_config": 2000.0}

    def measure(self, n, key=None):
        """The answers to a measure of problem n, and the schema's complaints about them."""
        import validate_transcript as vt
        with open(os.path.join(ROOT, "docs", "worker-protocol.schema.json"), encoding="utf-8") as f:
            whole, one = vt.validators(json.load(f))
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "metrics_worker.py")
            with open(script, "w") as f:
                f.write(METRICS)
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
            script = os.path.join(tmp, "metrics_worker.py")
            with open(script, "w") as f:
                f.write(METRICS)
            run = subprocess.run([os.environ["KTUNE_CLI"], "tune", "--worker", f"{sys.executable} {script}",
                                  "--shape", "n=8", "--output-dir", tmp, "--run-name", "m", "--warmup-ms", "0",
                                  "--min-samples", "3", "--max-samples", "3", "-q"],
                                 capture_output=True, text=True, timeout=120,
                                 env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"),
                                      "KTUNE_DEVICE_NAME": "test"})
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(os.path.join(tmp, "m", "trials.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 2)
        for row in rows:
            self.assertEqual(json.loads(row["metrics"]), {"key_chars": 3, "min_samples": 3, "speedup": 2})


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
