#!/usr/bin/env python3
"""Copies KernelBench problems with their sizes divided, for experiments that must fit minutes of
GPU time (the learning curve: tools/gpu/learning_curve.sh).

Usage: shrink_problems.py KERNELBENCH_DIR OUT_DIR --shrink N [NAME ...]

Writes OUT_DIR/levelN/NAME.py for each problem of levels 1 and 2 whose stem is among NAME (all
of them when none is given): the file as it is, except that each module-level assignment of an
integer literal to one of check_gpu.py's size names (batch_size, dim, in_features, ...) is divided
by N (at least 1). Expressions built on those names (bias_shape = (out_features,)) follow. The
copies are KernelBench's code: keep them out of the repository.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_gpu import SIZE_NAMES  # noqa: E402  (one list of size names for both tools)

ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_]\w*)(?P<eq>\s*=\s*)(?P<value>\d+)(?P<rest>\s*(#.*)?)$")


def shrink_text(text, factor):
    """The problem's source with its size assignments divided by `factor`; and what changed."""
    out, changed = [], []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        m = ASSIGNMENT.match(body)
        if m and m.group("name") in SIZE_NAMES and int(m.group("value")) > 1:
            value = max(1, int(m.group("value")) // factor)
            changed.append("%s %s -> %d" % (m.group("name"), m.group("value"), value))
            line = "%s%s%d%s%s" % (m.group("name"), m.group("eq"), value, m.group("rest") or "", line[len(body):])
        out.append(line)
    return "".join(out), changed


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernelbench_dir")
    p.add_argument("out_dir")
    p.add_argument("--shrink", type=int, required=True)
    p.add_argument("names", nargs="*")
    args = p.parse_intermixed_args()
    if args.shrink < 1:
        sys.exit("shrink_problems: --shrink must be at least 1")
    written = 0
    for level in (1, 2):
        src = os.path.join(args.kernelbench_dir, "KernelBench", "level%d" % level)
        if not os.path.isdir(src):
            src = os.path.join(args.kernelbench_dir, "level%d" % level)
        if not os.path.isdir(src):
            continue
        for name in sorted(os.listdir(src)):
            stem = name[:-3]
            if not name.endswith(".py") or (args.names and stem not in args.names):
                continue
            with open(os.path.join(src, name)) as f:
                text, changed = shrink_text(f.read(), args.shrink)
            os.makedirs(os.path.join(args.out_dir, "level%d" % level), exist_ok=True)
            with open(os.path.join(args.out_dir, "level%d" % level, name), "w") as f:
                f.write(text)
            print("level%d/%s: %s" % (level, name, ", ".join(changed) or "no size changed"))
            written += 1
    if written == 0:
        sys.exit("shrink_problems: no problem written (is %s a KernelBench checkout?)" % args.kernelbench_dir)


if __name__ == "__main__":
    main()
