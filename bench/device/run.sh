#!/usr/bin/env bash
# Runs issue 36's 16-core measurements in one go on a host with no Java (the runtime and jar that pack.sh packed sit
# beside this script), each step under a time limit, its output in $OUT (default ./out beside this script), and a
# summary of the figures at the end. About 7 minutes on a 16-core host; --quick checks the script itself in about
# 3 minutes on a small one (the development VM).
#
#   run.sh [--quick] [--part 1|2|3|4]
#
# --part runs one part (1: writer scaling and xproc, about 3 minutes; 2: the in-process replays; 3: the replays
# through the daemon; 4: the Aeron replay again with 16 MiB terms), for a device whose commands may run 10 minutes at
# most.
#
# Steps: host facts; WriterScalingBenchmark with 1, 2, 4 and 8 writer threads; xproc on the trace's own workload with
# the index in and out of the cache; the trace replay in process with 1, 2, 4 and 8 writers; the trace replay through
# the daemon with 8 writers over ZeroMQ and over Aeron, the router busy; the Aeron replay again with 16 MiB terms
# (the daemon's default 1 MiB holds about a millisecond of the trace at 12 M block ops/s: where Aeron's publisher
# fell behind on back-pressure on the 16-core host, ZeroMQ's queues took the same bursts).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
JAVA="$HERE/jre/bin/java"
[ -x "$JAVA" ] || JAVA="$(command -v java)"
CP="$HERE/lib/*"
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT"
QUICK=0
PART=all
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --part) PART="$2"; shift ;;
        *) echo "usage: run.sh [--quick] [--part 1|2|3|4]" >&2; exit 2 ;;
    esac
    shift
done
# part N: true when this run includes part N.
part() {
    [ "$PART" = all ] || [ "$PART" = "$1" ]
}
FLAGS=(-XX:+IgnoreUnrecognizedVMOptions --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED
    --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
BENCH=("$JAVA" "${FLAGS[@]}" -Xmx8g -cp "$CP" io.kvidx.bench.BenchMain)
if [ "$QUICK" = 1 ]; then
    BENCH=("$JAVA" "${FLAGS[@]}" -Xmx3g -cp "$CP" io.kvidx.bench.BenchMain)
fi

# step NAME LIMIT_S COMMAND...: runs the command with its output in $OUT/NAME.log, and says how it ended.
step() {
    local name="$1" limit="$2"
    shift 2
    local start
    start=$(date +%s)
    echo "== $name ($(date -u +%H:%M:%S), limit ${limit}s, load $(cut -d' ' -f1-3 /proc/loadavg))"
    timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    echo "   rc=$rc in $(( $(date +%s) - start ))s"
}

{
    date -u
    nproc
    lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|L3|NUMA'
    free -g | head -2
    cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null
    "$JAVA" -version 2>&1
} > "$OUT/host.txt" 2>&1
cat "$OUT/host.txt"

if [ "$QUICK" = 1 ]; then
    THREADS="1 2"
    INPROC_WRITERS="1 2"
    WRITERS=2
    SCALING=(-wi 1 -w 1 -i 1 -r 1 -p shared=0)
    TRACE=(--quick --no-live-routing --windows-ms 2000)
    XPROC_MS=1000
    EVICT_MIB=64
else
    THREADS="1 2 4 8"
    INPROC_WRITERS="1 2 4 8"
    WRITERS=8
    SCALING=(-wi 1 -w 1 -i 3 -r 1)
    # The whole trace (24.2 M block ops): windows from 6 M to 34 M block ops/s.
    TRACE=(--no-live-routing --windows-ms 4000,2000,1400,1000,700)
    XPROC_MS=3000
    # More than the 16-core Xeon's 300 MiB L3.
    EVICT_MIB=512
fi

if part 1; then
for t in $THREADS; do
    step "writer-scaling-t$t" 120 "${BENCH[@]}" WriterScalingBenchmark -t "$t" "${SCALING[@]}" \
        -rf json -rff "$OUT/writer-scaling-t$t.json"
done
step xproc-trace-warm 120 "${BENCH[@]}" xproc --workload trace --measure-ms "$XPROC_MS" --json
step xproc-trace-cold 180 "${BENCH[@]}" xproc --workload trace --measure-ms $(( XPROC_MS * 2 )) \
    --evict-mib "$EVICT_MIB" --json
fi
if part 2; then
for w in $INPROC_WRITERS; do
    step "trace-inproc-w$w" 150 "${BENCH[@]}" trace --transport inproc --writers "$w" "${TRACE[@]}" --json
done
fi
if part 3; then
step "trace-zmq-w$WRITERS" 180 "${BENCH[@]}" trace --transport zmq --writers "$WRITERS" --busy-router \
    --daemon-arg=--zmq-io-threads=4 --daemon-arg=--zmq-ingest-threads=2 "${TRACE[@]}" --json
step "trace-aeron-w$WRITERS" 180 "${BENCH[@]}" trace --transport aeron --writers "$WRITERS" --busy-router \
    "${TRACE[@]}" --json
fi
if part 4; then
step "trace-aeron-w$WRITERS-term16m" 180 "${BENCH[@]}" trace --transport aeron --writers "$WRITERS" --busy-router \
    --daemon-arg=--aeron-term-length=16777216 "${TRACE[@]}" --json
fi

# The figures, one line each (of the steps that ran).
echo "== summary"
for t in $THREADS; do
    [ -f "$OUT/writer-scaling-t$t.log" ] || continue
    printf 'writer scaling -t %s: ' "$t"
    # The score is the field before the units, or before the error when there is one (a count comes before it then).
    grep -E '^WriterScalingBenchmark' "$OUT/writer-scaling-t$t.log" | awk '{for (i = 1; i <= NF; i++)
        if ($i == "ns/op") printf "shared %s: %s ns/op  ", ($(i - 2) == "±" ? $(i - 6) : $(i - 3)),
            ($(i - 2) == "±" ? $(i - 3) : $(i - 1))}'
    echo
done
for name in xproc-trace-warm xproc-trace-cold; do
    [ -f "$OUT/$name.log" ] || continue
    printf '%s: ' "$name"
    grep -o '"p50_ns": [0-9]*, "p90_ns": [0-9]*, "p99_ns": [0-9]*' "$OUT/$name.log" | head -1
done
for log in "$OUT"/trace-*.log; do
    [ -f "$log" ] || continue
    echo "$(basename "$log" .log):"
    grep -E '^window' "$log" | sed 's/stages.*//'
done
tar -C "$OUT" -czf "$OUT/../kvidx-device-logs.tar.gz" . 2>/dev/null || true
