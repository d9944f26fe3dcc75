#!/usr/bin/env python3
"""The polygon of ktune's pnpoly example (pnpoly.json) and its precomputed slopes, as .npy files.

Kernel Tuner's pnpoly.py tests with a polygon of random vertices on the unit circle: angles drawn
uniformly in [0, 2 pi), sorted in descending order (so the polygon runs clockwise). This writes
such a polygon, seeded so every run writes the same files, and the slope of each edge as
pnpoly.cu's use_precomputed_slopes=1 configs read it from d_slopes: edge j runs from vertex j to
vertex j-1 (vertex V-1 for j = 0), slope[j] = (x[j-1] - x[j]) / (y[j-1] - y[j]), in f32.

  vertices.npy  float32, shape (V, 2): x, y per vertex (the spec's vertex_xy, 2*V floats)
  slopes.npy    float32, shape (V,)

Python's standard library only (numpy reads the files; this does not need it). The arithmetic is
f32's: each difference and quotient is done in double on f32 values and rounded to f32, which
gives the f32 result exactly (double holds more than twice f32's precision). The files next to
the spec were written with the defaults; run it again for another polygon and give the spec's
key field `vertices` the same V:

  python3 pnpoly_data.py [--vertices 600] [--seed 1] [--out DIR]
"""
import argparse
import math
import os
import random
import struct


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def polygon(vertices, seed):
    rng = random.Random(seed)
    angles = sorted((rng.random() * 2.0 * math.pi for _ in range(vertices)), reverse=True)
    return [(f32(math.cos(a)), f32(math.sin(a))) for a in angles]


def slopes(points):
    out = []
    for j, (xj, yj) in enumerate(points):
        xk, yk = points[j - 1]  # j = 0 reads the last vertex
        dy = f32(yk - yj)
        if dy == 0.0:
            raise SystemExit(f"edge {j} is level (y = {yj}): its slope is infinite; try another --seed")
        out.append(f32(f32(xk - xj) / dy))
    return out


def write_npy(path, values, shape):
    """A version 1.0 .npy file of little-endian float32, C order, as numpy.save writes it."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (repr(tuple(shape)),)
    # numpy pads the header with spaces and a newline so the data starts on a 64-byte boundary.
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vertices", type=int, default=600, help="polygon vertices (the spec's key field `vertices`)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=here, help="folder to write vertices.npy and slopes.npy (default: this one)")
    args = ap.parse_args()
    if args.vertices < 3:
        raise SystemExit("--vertices: a polygon needs at least 3")
    points = polygon(args.vertices, args.seed)
    write_npy(os.path.join(args.out, "vertices.npy"), [c for p in points for c in p], (args.vertices, 2))
    write_npy(os.path.join(args.out, "slopes.npy"), slopes(points), (args.vertices,))
    print(f"wrote {args.vertices} vertices and their slopes to {args.out}")


if __name__ == "__main__":
    main()
