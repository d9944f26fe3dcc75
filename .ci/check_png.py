#!/usr/bin/env python3
"""Checks that a PNG is a real picture of a window, not an empty or blank one.

    check_png.py FILE [--min-width 640] [--min-height 400] [--min-colours 64]

Python's standard library only (zlib): decodes 8-bit RGB / RGBA PNGs, as Qt saves them, and
requires the size, a number of distinct colours (text, charts and icons are anti-aliased into
thousands) and that no single colour covers nearly the whole picture.
"""
import argparse
import collections
import struct
import sys
import zlib

MAX_SHARE_OF_ONE_COLOUR = 0.95


def decode(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    width, height, depth, colour_type, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(colour_type)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {colour_type}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = prev[i], prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, rows, channels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--min-width", type=int, default=640)
    parser.add_argument("--min-height", type=int, default=400)
    parser.add_argument("--min-colours", type=int, default=64)
    args = parser.parse_args()
    try:
        width, height, rows, channels = decode(args.file)
    except (OSError, ValueError, zlib.error, struct.error, TypeError) as e:
        sys.exit(f"{args.file}: cannot read the PNG: {e}")
    colours = collections.Counter()
    for line in rows:
        colours.update(bytes(line[i:i + 3]) for i in range(0, len(line), channels))
    top_share = colours.most_common(1)[0][1] / (width * height)
    print(f"{args.file}: {width}x{height}, {len(colours)} distinct colours, "
          f"the commonest covers {100 * top_share:.1f} %")
    problems = []
    if width < args.min_width or height < args.min_height:
        problems.append(f"smaller than {args.min_width}x{args.min_height}")
    if len(colours) < args.min_colours:
        problems.append(f"fewer than {args.min_colours} distinct colours")
    if top_share > MAX_SHARE_OF_ONE_COLOUR:
        problems.append(f"one colour covers over {100 * MAX_SHARE_OF_ONE_COLOUR:.0f} % (blank)")
    if problems:
        sys.exit(f"{args.file}: not a picture of the workbench: " + "; ".join(problems))


if __name__ == "__main__":
    main()
