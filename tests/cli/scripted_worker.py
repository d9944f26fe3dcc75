#!/usr/bin/env python3
"""A ktune worker whose configs take scripted times, for tests of how a search ends. x=1 is lucky
in the search (its first build takes 90 us) and slow once built again for the re-measure (130 us);
x=2 takes 100 us, x=3 110 us, x=4 200 us. SCRIPTED_XS lists the candidates (default 1,2,3,4)."""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ktune_worker as kw  # noqa: E402

STEADY_NS = {2: 100e3, 3: 110e3, 4: 200e3}
builds = collections.Counter()


def build(config, problem, inputs):
    x = config["x"]
    builds[x] += 1

    def run():
        return [1.0]

    run.ns = (90e3 if builds[x] == 1 else 130e3) if x == 1 else STEADY_NS[x]
    return run


kw.serve(kw.Family(name="scripted", key_fields=["n"], space={"x": [int(v) for v in os.environ.get("SCRIPTED_XS", "1,2,3,4").split(",")]},
                   inputs=lambda problem, seed: None, reference=lambda problem, inputs: [1.0], build=build,
                   timer=lambda run, launches: run.ns))
