#!/usr/bin/env python3
"""Checks an HTML report of `plan --html` / `compare --html` (and its PNG).

  html_check.py page PAGE.html PLAN_JSON   the page against `plan --json`
  html_check.py png IMAGE.png              the rendering is not blank

The page: self-contained (no script, no link, no src= or url( loading
anything); one timeline row per pipeline stage of the chosen plan, each with
the schedule's op count; one memory bar per stage whose segments sum to its
total, the largest total the predicted peak; the time parts sum to the step.
"""
import json
import re
import struct
import sys
import zlib
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elems = []  # (tag, attrs dict, index of the enclosing g.stage-row / g.mem-bar)
        self.stack = []
        self.group = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class", "").split()
        if tag == "g" and ("stage-row" in cls or "mem-bar" in cls):
            self.group = len(self.elems)
        self.elems.append((tag, a, self.group))
        if tag not in ("rect", "line", "meta", "i"):
            self.stack.append((tag, len(self.elems) - 1))

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        self.elems.append((tag, a, self.group))

    def handle_endtag(self, tag):
        while self.stack:
            t, i = self.stack.pop()
            if t == tag:
                if self.group == i:
                    self.group = None
                break


def has_class(a, c):
    return c in a.get("class", "").split()


def check_page(path, plan_json):
    text = open(path, encoding="utf-8").read()
    low = text.lower()
    for bad in ("<script", "<link", "<img", "<iframe", "<object", "@import", "url(", " src=",
                " href="):
        assert bad not in low, "the page loads something: %r" % bad
    d = json.load(open(plan_json))
    chosen = d["plans"][0]
    par = chosen["parallel"]
    pp, vpp, m = par["pp"], par["vpp"], chosen["num_microbatches"]
    p = Page()
    p.feed(text)
    el = p.elems
    rows = [i for i, (t, a, g) in enumerate(el) if t == "g" and has_class(a, "stage-row")]
    assert len(rows) == pp, "timeline rows %d, pipeline stages %d" % (len(rows), pp)
    per_op = 3 if par["schedule"].startswith("zb") else 2
    timeline = [a for (t, a, g) in el if t == "svg" and has_class(a, "timeline")][0]
    collapsed = timeline["data-collapsed"] == "1"
    elision = [a for (t, a, g) in el if t == "g" and has_class(a, "elision")]
    assert len(elision) == (1 if collapsed else 0), "elision marks %d" % len(elision)
    for r in rows:
        a = el[r][1]
        ops = [o for (t, o, g) in el if g == r and t == "rect" and has_class(o, "op")]
        total, drawn = int(a["data-ops"]), int(a["data-ops-drawn"])
        assert total == per_op * vpp * m, (
            "stage %s: %d ops, the schedule runs %d" % (a["data-stage"], total, per_op * vpp * m))
        assert drawn + int(a["data-ops-elided"]) == total, a
        # an op cut by the elision mark is drawn once (on one side of it)
        assert len(ops) == drawn, "stage %s: %d op rects, %d drawn" % (a["data-stage"],
                                                                        len(ops), drawn)
        if collapsed:
            # the warm-up, a few steady micro-batches and the cool-down: what is
            # drawn does not grow with the micro-batches
            assert drawn <= 2 * per_op * vpp * (2 * pp + 4), (a["data-stage"], drawn)
        else:
            assert drawn == total
        kinds = {k for o in ops for k in o["class"].split() if k.startswith("op-")}
        assert kinds == ({"op-F", "op-B", "op-W"} if per_op == 3 else {"op-F", "op-B"}), kinds
    cap = [a for (t, a, g) in el if t == "p" and has_class(a, "timeline-caption")][0]
    assert float(cap["data-pipeline-s"]) <= float(cap["data-step-s"]), cap
    assert abs(float(cap["data-step-s"]) - chosen["step_time_s"]) <= 1e-6 * chosen["step_time_s"]
    if collapsed:
        hidden = int(elision[0]["data-elided-microbatches"])
        assert 0 < hidden < m, "the mark says %d micro-batches left out of %d" % (hidden, m)
    # every chart has an axis with a unit
    for cls in ("timeline", "memory", "time-bars"):
        svg_i = [i for i, (t, a, g) in enumerate(el) if t == "svg" and has_class(a, cls)]
        assert svg_i, "no %s chart" % cls
    axes = [a for (t, a, g) in el if t == "g" and (has_class(a, "axis-x") or has_class(a, "axis-y"))]
    assert len(axes) >= 3 and all(a.get("data-unit") for a in axes), axes
    svg = [a for (t, a, g) in el if t == "svg" and has_class(a, "memory")][0]
    peak = int(svg["data-predicted-peak-bytes"])
    assert peak == chosen["memory"]["total_bytes"], (peak, chosen["memory"]["total_bytes"])
    bars = [i for i, (t, a, g) in enumerate(el) if t == "g" and has_class(a, "mem-bar")]
    assert len(bars) == pp, "memory bars %d, stages %d" % (len(bars), pp)
    totals = []
    for b in bars:
        segs = [int(a["data-bytes"]) for (t, a, g) in el if g == b and has_class(a, "mem-seg")]
        assert len(segs) == 6, segs  # the five kinds and the runtime's share
        total = int(el[b][1]["data-total-bytes"])
        assert sum(segs) == total, "stage %s: parts %d, total %d" % (
            el[b][1]["data-stage"], sum(segs), total)
        totals.append(total)
    assert max(totals) == peak, "largest stage %d, predicted peak %d" % (max(totals), peak)
    parts = [float(a["data-s"]) for (t, a, g) in el if t == "tr" and "data-s" in a]
    step = chosen["step_time_s"]
    assert abs(sum(parts) - step) <= 1e-6 * step, (parts, step)
    n_plans = sum(1 for (t, a, g) in el if t == "tr" and has_class(a, "plan-row"))
    assert n_plans == len(d["plans"]), (n_plans, len(d["plans"]))
    print("page ok: %d stages, %d ops a stage (%s), peak %.3f GB, %d plans" % (
        pp, per_op * vpp * m, "collapsed" if collapsed else "all drawn", peak / 1e9, n_plans))


def read_png(path):
    """8-bit RGB / RGBA, non-interlaced PNG -> (width, height, rows of bytes, channels)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            ch = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 0:
            rows.append(bytes(line))
            prev = line
            continue
        if f == 2:
            line = bytearray((u + v) & 255 for u, v in zip(line, prev))
            rows.append(bytes(line))
            prev = line
            continue
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, ch


def check_png(path):
    w, h, rows, ch = read_png(path)
    colours = {}
    nonwhite = 0
    for row in rows[::2]:
        for x in range(0, w * ch, ch * 2):
            px = row[x:x + 3]
            colours[px] = colours.get(px, 0) + 1
            nonwhite += px != b"\xff\xff\xff"
    total = sum(colours.values())
    frac = nonwhite / total
    assert frac > 0.03, "the rendering is almost blank: %.2f %% not white" % (100 * frac)
    # the forward ops' blue and the activations' red are drawn
    for name, rgb in (("forward", (0x4e, 0x79, 0xa7)), ("activations", (0xe1, 0x57, 0x59))):
        assert colours.get(bytes(rgb), 0) > 20, "no %s colour in the rendering" % name
    print("png ok: %dx%d, %.1f %% not white, %d colours" % (w, h, 100 * frac, len(colours)))


if __name__ == "__main__":
    if sys.argv[1] == "page":
        check_page(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "png":
        check_png(sys.argv[2])
    else:
        sys.exit("usage: html_check.py page PAGE PLAN_JSON | png IMAGE")
