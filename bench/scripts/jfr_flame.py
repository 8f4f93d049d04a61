#!/usr/bin/env python3
"""Turns a JFR recording's execution samples into `perf script` text, which flame graph tools read.

Usage:
  jfr print --stack-depth 64 --events jdk.ExecutionSample rec.jfr > samples.txt
  bench/scripts/jfr_flame.py samples.txt THREAD [ROOT] > samples.perf
  npx flamegraph@1.3.0 -t perf --titletext "..." < samples.perf > flame.svg

THREAD: only samples of threads whose name contains it (e.g. jmh-worker, kvidx-writer).
ROOT:   only samples whose stack contains a frame ending with it (e.g. churn_avgt_jmhStub: JMH's measured phase).
"""
import re
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    text = open(sys.argv[1], encoding="utf-8").read()
    thread = sys.argv[2]
    root = sys.argv[3] if len(sys.argv) > 3 else None
    out = sys.stdout
    n = 0
    for event in text.split("jdk.ExecutionSample")[1:]:
        m = re.search(r'sampledThread = "([^"]*)"', event)
        if not m or thread not in m.group(1):
            continue
        frames = re.findall(r"^\s+([\w$.<>]+)\(", event, re.M)
        if not frames or (root and not any(f.endswith(root) for f in frames)):
            continue
        n += 1
        out.write("java 1 [000] %d.000000: cpu-clock:\n" % n)
        for f in frames:
            out.write("\t0 %s (java)\n" % f)
        out.write("\n")
    sys.stderr.write("%d samples\n" % n)


if __name__ == "__main__":
    main()
