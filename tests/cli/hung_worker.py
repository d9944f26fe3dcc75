#!/usr/bin/env python3
"""A worker that hangs in its first measure, for orphan checks after ktune is killed.
HUNG_PIDS=FILE: written at start with "PID PPID" (the worker and whatever started it, a shell when it
runs behind `sh -c '...; true'`); FILE.measuring appears once the hanging measure has begun.
HUNG_KIND=raw (default): the raw protocol, the hang in the main thread (it reads nothing more, so it
never sees its stdin close). HUNG_KIND=kw: python/ktune_worker, the hang in its measuring thread."""
import json
import os
import sys
import time

pids = os.environ["HUNG_PIDS"]
with open(pids + ".tmp", "w") as f:
    f.write("%d %d\n" % (os.getpid(), os.getppid()))
os.replace(pids + ".tmp", pids)


def hang():
    open(pids + ".measuring", "w").close()
    time.sleep(3600)


if os.environ.get("HUNG_KIND", "raw") == "kw":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import ktune_worker as kw  # noqa: E402

    kw.serve(kw.Family(name="raw", key_fields=["n"], space={"x": [1, 2]}, inputs=lambda problem, seed: None,
                       reference=lambda problem, inputs: [1.0], build=lambda config, problem, inputs: hang),
             backend="hung")
    sys.exit(0)

for line in sys.stdin:
    req = json.loads(line)
    kind, rid = req["type"], req.get("id")
    if kind == "hello":
        answer = {"type": "hello", "protocol": 1, "worker": "hung_worker.py", "backend": "hung",
                  "devices": [{"backend": "hung", "index": 0, "name": "Hung Device"}],
                  "families": [{"name": "raw", "key_fields": [{"name": "n"}],
                                "space": {"parameters": [{"name": "x", "values": [1, 2]}]}}]}
    elif kind == "prepare" and req.get("baseline"):
        answer = {"type": "failed", "id": rid, "status": "launch_error", "message": "no baseline"}
    elif kind == "prepare":
        answer = {"type": "prepared", "id": rid}
    elif kind == "measure":
        hang()
    else:
        break
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
