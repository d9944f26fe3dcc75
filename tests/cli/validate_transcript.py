#!/usr/bin/env python3
"""Checks worker-protocol messages against docs/worker-protocol.schema.json (with Debian's
python3-jsonschema): the transcripts protocol_tee.py recorded, both directions, and the example
messages of the docs' fenced code blocks.

validate_transcript.py SCHEMA [--doc FILE]... [--require] [TRANSCRIPT]...
--require: every message type of both directions must occur in the transcripts (so that a run that
sent none of some type cannot pass for a checked one). Exit 0 when all is valid, 1 naming each
invalid line and why, 2 when the check cannot run."""
import json
import re
import sys

# The schema's definition of each message, by direction and type.
DEFS = {
    "worker": {"hello": "client_hello", "prepare": "prepare", "measure": "measure", "sample": "sample",
               "shutdown": "shutdown"},
    "ktune": {"hello": "worker_hello", "prepared": "prepared", "measured": "measured", "sampled": "sampled",
              "failed": "failed", "error": "error", "bye": "bye"},
}


def validators(schema):
    try:
        import jsonschema
    except ImportError:
        sys.exit("validate_transcript.py: python3-jsonschema is not installed (apt-get install python3-jsonschema), "
                 "so the protocol's transcripts cannot be checked against its schema")
    cls = jsonschema.Draft202012Validator
    cls.check_schema(schema)
    whole = cls(schema)
    # One message type's schema: the whole schema's $defs, with a $ref to that type in place of
    # the oneOf (the dict is built without it: newer jsonschema copies the schema it is given).
    base = {k: v for k, v in schema.items() if k != "oneOf"}
    one = {name: cls({**base, "$ref": "#/$defs/" + name}) for d in DEFS.values() for name in d.values()}
    return whole, one


def direction_of(message):
    """The direction a message travels, from its type (a worker's hello names its backend)."""
    kind = message.get("type")
    if kind == "hello":
        return "ktune" if "backend" in message else "worker"
    for to, types in DEFS.items():
        if kind in types:
            return to
    return None


def check(message, to, whole, one):
    """The reasons `message`, sent to `to`, is not a valid protocol message (empty when it is)."""
    kind = message.get("type") if isinstance(message, dict) else None
    name = DEFS.get(to, {}).get(kind)
    if name is None:
        return [f"a message of type {kind!r} does not go to the {to}"]
    errors = [f"{'/'.join(str(p) for p in e.absolute_path) or '(message)'}: {e.message}"
              for e in sorted(one[name].iter_errors(message), key=lambda e: list(e.absolute_path))]
    if not errors and not whole.is_valid(message):
        errors.append("valid as " + name + " but not as exactly one message of the schema's oneOf")
    return errors


def doc_messages(path):
    """(line number, text) of each line of a fenced code block that starts with '{'."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("```"):
                fenced = not fenced
            elif fenced and line.lstrip().startswith("{"):
                yield n, line.strip()


def main(argv):
    schema_path, docs, transcripts, require = argv[0], [], [], False
    rest = iter(argv[1:])
    for a in rest:
        if a == "--doc":
            docs.append(next(rest))
        elif a == "--require":
            require = True
        else:
            transcripts.append(a)
    with open(schema_path, encoding="utf-8") as f:
        whole, one = validators(json.load(f))
    problems, seen, count = [], {to: set() for to in DEFS}, 0
    for path in transcripts:
        with open(path, encoding="utf-8") as f:
            for n, entry in enumerate(f, 1):
                entry = json.loads(entry)
                line, to = entry["line"], entry["to"]
                try:
                    message = json.loads(line)
                except ValueError as e:
                    problems.append(f"{path}:{n} to the {to}: not JSON ({e}): {line[:200]}")
                    continue
                count += 1
                if isinstance(message, dict):
                    seen[to].add(message.get("type"))
                problems += [f"{path}:{n} to the {to}, {str(message.get('type'))}: {why}"
                             for why in check(message, to, whole, one)]
    for path in docs:
        for n, line in doc_messages(path):
            try:
                message = json.loads(line)
            except ValueError as e:
                problems.append(f"{path}:{n}: an example message that is not JSON ({e}): {line[:200]}")
                continue
            count += 1
            problems += [f"{path}:{n}, {message.get('type')}: {why}"
                         for why in check(message, direction_of(message), whole, one)]
    if require:
        for to, types in DEFS.items():
            for kind in sorted(set(types) - seen[to]):
                problems.append(f"no {kind!r} message to the {to} in the transcripts: the runs did not exercise it")
    for p in problems:
        print(p)
    print(f"{count} messages checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
