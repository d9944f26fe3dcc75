#!/usr/bin/env python3
"""A worker written against the raw protocol (no ktune_worker package), misbehaving as RAW_MODE says:
noise      prints non-protocol lines on stdout before every answer
garbage    answers the measure of x=2 with a message of an unknown type
exit       exits with code 3 when asked to measure x=2
segv       kills itself with SIGSEGV when asked to measure x=2
old        says hello with protocol 99
slow       sleeps RAW_SLEEP seconds in every measure
lie        calls x=2 valid and fastest (500 ns) though its own numbers say 98.2% of its outputs are wrong
zero       measures x=2 at 0 ns
negative   measures x=2 at -6 ns
nan        measures x=2 at NaN ns, written as json.dumps does: a bare NaN, which is not JSON
close      closes its stdout when asked to measure x=2, and keeps running
chatty     writes "measuring x=X" to stderr and "debug: x=X" to stdout in every measure; at x=2 then
           "giving up on x=2" to stderr, and exits with code 3
Every other config measures 1000+x ns, valid.
RAW_FAMILY='{"key_fields": [...], "tp_head_fields": [...], ...}': members that replace or join those of the family
"raw" in the hello (its key fields, tensor-parallel splits, shape rules).
Several devices: RAW_DEVICES="Raw A,Raw A,Raw B" names the machine's devices (default one, "Raw Device"); the
worker serves the one `--device I` names and, with RAW_LOG=DIR, appends each config it measures to
DIR/device<I>.log (the tests see which worker measured what)."""
import json
import math
import os
import signal
import sys
import time

mode = os.environ.get("RAW_MODE", "")
names = os.environ.get("RAW_DEVICES", "Raw Device").split(",")
device = int(sys.argv[sys.argv.index("--device") + 1]) if "--device" in sys.argv else 0
if device >= len(names):
    sys.exit("raw_worker.py: no device %d" % device)


def send(msg):
    if mode == "noise":
        sys.stdout.write("debug: a kernel printed this\n")
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    req = json.loads(line)
    kind, rid = req["type"], req.get("id")
    if kind == "hello":
        family = {"name": "raw", "key_fields": [{"name": "n", "numeric": True, "default": "8"}], "flops": "n",
                  "space": {"parameters": [{"name": "x", "values": [1, 2, 3, 4]}]}}
        family.update(json.loads(os.environ.get("RAW_FAMILY", "{}")))
        send({"type": "hello", "protocol": 99 if mode == "old" else 1, "worker": "raw_worker.py", "backend": "raw",
              "devices": [{"backend": "raw", "index": device, "name": names[device], "properties": {}, "text": {}}],
              "device_count": len(names), "families": [family]})
    elif kind == "prepare" and req.get("baseline"):
        send({"type": "failed", "id": rid, "status": "launch_error", "message": "no baseline"})
    elif kind == "prepare":
        send({"type": "prepared", "id": rid, "compile_time_s": 0.001})
    elif kind == "measure":
        x = req["config"]["x"]
        if x == 2 and mode == "garbage":
            send({"type": "surprise", "id": rid})
            continue
        if x == 2 and mode == "exit":
            sys.exit(3)
        if mode == "chatty":
            sys.stderr.write("measuring x=%d\n" % x)
            sys.stderr.flush()
            sys.stdout.write("debug: x=%d\n" % x)
            sys.stdout.flush()
            if x == 2:
                sys.stderr.write("giving up on x=2\n\n")
                sys.exit(3)
        if x == 2 and mode == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if x == 2 and mode == "close":
            os.close(1)
            time.sleep(120)
        if mode == "slow":
            time.sleep(float(os.environ.get("RAW_SLEEP", "0.3")))
        if os.environ.get("RAW_LOG"):
            with open(os.path.join(os.environ["RAW_LOG"], "device%d.log" % device), "a") as log:
                log.write("n=%s x=%d\n" % (req["problem"]["fields"]["n"], x))
        ns = {"lie": 500.0, "zero": 0.0, "negative": -6.0, "nan": math.nan}.get(mode, 1000.0 + x) if x == 2 else 1000.0 + x
        wrong = {"max_abs_error": 3.5, "mismatch_fraction": 0.982}
        send({"type": "measured", "id": rid, "status": "ok", "note": "", "samples_ns": [ns] * 5, "compile_time_s": 0.001,
              "validation": wrong if x == 2 and mode == "lie" else {"max_abs_error": 0, "mismatch_fraction": 0}})
    elif kind == "shutdown":
        send({"type": "bye", "id": rid})
        break
    else:  # sample (the re-measure of the best configs) and anything newer: unknown here, as the protocol says
        send({"type": "error", "id": rid, "message": "unknown message type %r; raw_worker.py speaks hello, prepare, "
              "measure and shutdown" % kind})
