#!/usr/bin/env python3
"""A worker written against the raw protocol (no ktune_worker package), misbehaving as RAW_MODE says:
noise      prints non-protocol lines on stdout before every answer
garbage    answers the measure of x=2 with a message of an unknown type
exit       exits with code 3 when asked to measure x=2
segv       kills itself with SIGSEGV when asked to measure x=2
old        says hello with protocol 99
slow       sleeps RAW_SLEEP seconds in every measure
Every other config measures 1000+x ns, valid."""
import json
import os
import signal
import sys
import time

mode = os.environ.get("RAW_MODE", "")


def send(msg):
    if mode == "noise":
        sys.stdout.write("debug: a kernel printed this\n")
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    req = json.loads(line)
    kind, rid = req["type"], req.get("id")
    if kind == "hello":
        send({"type": "hello", "protocol": 99 if mode == "old" else 1, "worker": "raw_worker.py", "backend": "raw",
              "devices": [{"backend": "raw", "index": 0, "name": "Raw Device", "properties": {}, "text": {}}],
              "families": [{"name": "raw", "key_fields": [{"name": "n", "numeric": True, "default": "8"}],
                            "flops": "n", "space": {"parameters": [{"name": "x", "values": [1, 2, 3, 4]}]}}]})
    elif kind == "prepare":
        send({"type": "prepared", "id": rid, "compile_time_s": 0.001})
    elif kind == "measure":
        x = req["config"]["x"]
        if x == 2 and mode == "garbage":
            send({"type": "surprise", "id": rid})
            continue
        if x == 2 and mode == "exit":
            sys.exit(3)
        if x == 2 and mode == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode == "slow":
            time.sleep(float(os.environ.get("RAW_SLEEP", "0.3")))
        send({"type": "measured", "id": rid, "status": "ok", "note": "", "samples_ns": [1000.0 + x] * 5,
              "compile_time_s": 0.001, "validation": {"max_abs_error": 0, "mismatch_fraction": 0}})
    elif kind == "shutdown":
        send({"type": "bye", "id": rid})
        break
