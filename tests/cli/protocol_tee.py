#!/usr/bin/env python3
"""protocol_tee.py LOG CMD [ARG...]: runs the worker CMD, passing ktune's stdin to it and its stdout
back, and appends every line of both directions to LOG as {"to": "worker"|"ktune", "line": ...}:
a transcript of a real run, which validate_transcript.py checks against the protocol's schema."""
import json
import subprocess
import sys
import threading

log_path, command = sys.argv[1], sys.argv[2:]
lock = threading.Lock()
log = open(log_path, "a", encoding="utf-8")
worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def record(to, line):
    with lock:
        log.write(json.dumps({"to": to, "line": line.decode("utf-8", "replace").rstrip("\r\n")}) + "\n")
        log.flush()


def forward_requests():
    for line in sys.stdin.buffer:
        record("worker", line)
        try:
            worker.stdin.write(line)
            worker.stdin.flush()
        except BrokenPipeError:
            break
    try:
        worker.stdin.close()
    except BrokenPipeError:
        pass


threading.Thread(target=forward_requests, daemon=True).start()
for line in worker.stdout:
    record("ktune", line)
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(worker.wait())
