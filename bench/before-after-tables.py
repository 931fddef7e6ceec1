#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/before-after-tables.py DIR PAIRS: the ratios of bench/before-after.sh's
runs side by side (each a ratio to the peer in the same run; "-" where a
script printed none)."""
import re
import sys


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_rows(path):
    try:
        return [cells(l) for l in open(path) if l.startswith(("| small", "| 600k"))]
    except OSError:
        return []


def grpc(path, test, col):
    """(ours/HAProxy OK calls/s, our p99, HAProxy's p99) for test."""
    ours = peer = None
    for c in table_rows(path):
        if c[0] == test and "gpuslice" in c[1]:
            ours = c
        elif c[0] == test and "haproxy" in c[1]:
            peer = c
    if not ours:
        return "-"
    if col == "ratio":
        return ours[-1]
    return "%s / %s" % (ours[5], peer[5] if peer else "-")


def bench_vs_h2load(path):
    try:
        m = re.search(r"gpuslice bench / h2load OK calls/s: ([\d.]+)", open(path).read())
    except OSError:
        return "-"
    return m.group(1) if m else "-"


def proxy(path, test, threads):
    for c in table_rows(path):
        if c[0] == test and "haproxy" in c[1] and c[1].startswith("haproxy (%s " % threads):
            return c[-2]
    return "-"


def loadgen(path, name):
    try:
        m = re.search(r"\| %s \| \d+ \| \d+ \| ([\d.]+)" % re.escape(name), open(path).read())
    except OSError:
        return "-"
    return m.group(1) if m else "-"


def main(d, pairs):
    print("gRPC (bench/grpc.sh): ours/HAProxy OK calls/s; bench -i grpc / h2load on 600 KB calls")
    print("| pair | binary | small 16x32 | p99 ours / HAProxy | small 4x8 | 600k 4x8 | bench/h2load 4x8 | bench/h2load 16x32 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for i in range(1, pairs + 1):
        for s in ("before", "after"):
            g, g4 = "%s/grpc-%s-%d.out" % (d, s, i), "%s/grpc48-%s-%d.out" % (d, s, i)
            print("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
                i, s, grpc(g, "small", "ratio"), grpc(g, "small", "p99"), grpc(g4, "small", "ratio"),
                grpc(g4, "600k", "ratio"), bench_vs_h2load(g4), bench_vs_h2load(g)))
    print("\nHTTP (bench/proxy.sh: ours/HAProxy requests/s; bench/loadgen.sh: bench/wrk)")
    print("| pair | binary | small 1 thread | small 2 threads | 600k 1 thread | 600k 2 threads | nginx file | worker |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for i in range(1, pairs + 1):
        for s in ("before", "after"):
            p, lg = "%s/proxy-%s-%d.out" % (d, s, i), "%s/loadgen-%s-%d.out" % (d, s, i)
            print("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
                i, s, proxy(p, "small", 1), proxy(p, "small", 2), proxy(p, "600k", 1),
                proxy(p, "600k", 2), loadgen(lg, "nginx, 612-byte file"),
                loadgen(lg, "gpuslice worker, GET /v2/health/ready")))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
