"""What the tests of examples/workers/triton_*.py share: the worker loaded as a module, the flags it
refuses, a stand-in command serving its family without the GPU parts, its exit where torch or
triton is missing, and the main that runs the plain suites or, with --torch, the torch ones."""
import contextlib
import importlib.util
import io
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SKIP = 77  # ctest: skipped
sys.dont_write_bytecode = True  # importing the worker leaves no __pycache__ in the source tree


def worker_path(name):
    return os.path.join(ROOT, "examples", "workers", name + ".py")


def load_worker(name):
    """examples/workers/<name>.py as a module: it imports without torch and triton."""
    spec = importlib.util.spec_from_file_location(name, worker_path(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refused(test, parse_args, argv):
    """What `parse_args(argv)` says on stderr as it exits with argparse's usage error (2)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), test.assertRaises(SystemExit) as e:
        parse_args(argv)
    test.assertEqual(e.exception.code, 2)
    return err.getvalue()


def write_serve(tmp, worker, device=None, patch=""):
    """tmp/serve.py, which serves `worker`'s family for the flags it is given, without the GPU parts it
    never calls for a dry run (`patch`: lines run on the family `f` first), on `device` where given
    (else ktune's own description); returns its path."""
    serve = os.path.join(tmp, "serve.py")
    with open(serve, "w") as f:
        f.write(f"import importlib.util, sys\nspec = importlib.util.spec_from_file_location('w', {worker!r})\n"
                "w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w)\n"
                "args, space = w.parse_args(sys.argv[1:])\nf = w.family(space)\n" + patch +
                "w.kw.serve(f, backend='triton'" + (f", device={device!r}" if device else "") + ")\n")
    return serve


def assert_says_what_is_missing(test, worker, gpu):
    """Without torch or triton the worker exits before its hello, naming which and the Python."""
    run = subprocess.run([sys.executable, worker], input='{"type": "hello", "protocol": 1}\n', capture_output=True,
                         text=True, timeout=60)
    test.assertNotEqual(run.returncode, 0)
    test.assertRegex(run.stderr, rf"needs torch and triton with {gpu}: (torch|triton) is not importable by ")
    test.assertEqual(run.stdout, "")


def main(worker, plain, torch_cases):
    """Runs the `plain` test cases, or with --torch the `torch_cases`: those exit SKIP where the
    worker found no torch."""
    if "--torch" in sys.argv:
        sys.argv.remove("--torch")
        if worker.torch is None:
            print(f"SKIP: torch is not importable by {sys.executable}: the workload and reference tests need it "
                  "(Debian: apt-get install python3-torch)")
            sys.exit(SKIP)
        cases = torch_cases
    else:
        cases = plain
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in cases)
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
