#!/usr/bin/env bash
# Reports how ready this host is for kvidx; changes nothing. Exit code 0 always; read the WARN lines.
set -u
warn() { printf 'WARN  %s\n' "$*"; }
ok() { printf 'ok    %s\n' "$*"; }

cpus=$(nproc)
ok "cpus: $cpus"
[ "$cpus" -ge 4 ] || warn "fewer than 4 cpus: busy-spin idle strategies will starve other threads; keep the defaults (sleeping/backoff)"

dir=${KVIDX_DIR:-/dev/shm/kvidx}
parent=$(dirname "$dir")
if mountpoint -q "$dir" 2>/dev/null; then
    opts=$(findmnt -no OPTIONS "$dir")
    ok "$dir is its own mount ($opts)"
    case "$opts" in *huge=*) ok "huge pages configured for the index mount";; *) warn "index mount has no huge= option (run tuning/mount-index-tmpfs.sh)";; esac
else
    fs=$(stat -f -c %T "$parent" 2>/dev/null || echo unknown)
    [ "$fs" = "tmpfs" ] && ok "$parent is tmpfs" || warn "$parent is $fs, not tmpfs: the index would be backed by disk"
    warn "$dir is not a dedicated tmpfs with huge pages (tuning/mount-index-tmpfs.sh): 4 KiB pages cost TLB misses on large indexes"
fi

if [ -d "$dir" ]; then
    mode=$(stat -c %a "$dir")
    case "$mode" in
        *7|*6|*3|*2) warn "$dir is mode $mode, world-writable: mount it with tuning/mount-index-tmpfs.sh (0750 kvidx:kvidx)";;
        *) ok "$dir: mode $mode, $(stat -c %U:%G "$dir")";;
    esac
fi

thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo n/a)
ok "transparent huge pages: $thp"

for key in net.core.rmem_max net.core.wmem_max; do
    v=$(sysctl -n "$key" 2>/dev/null || echo 0)
    if [ "$v" -lt 2097152 ]; then warn "$key=$v (< 2 MiB): Aeron UDP will drop under load (tuning/sysctl-udp.sh)"; else ok "$key=$v"; fi
done

gov=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo n/a)
[ "$gov" = "performance" ] || [ "$gov" = "n/a" ] && ok "cpu governor: $gov" || warn "cpu governor is $gov: set 'performance' for stable latency"

isolated=$(cat /sys/devices/system/cpu/isolated 2>/dev/null)
[ -n "$isolated" ] && ok "isolated cpus: $isolated" || warn "no isolated cpus (isolcpus=/nohz_full= on the kernel command line) for the writer and router threads"

limit=$(ulimit -l)
ok "memlock limit: $limit (PosixNative.mlock needs it to cover the index)"
