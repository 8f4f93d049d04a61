#!/usr/bin/env bash
# Reports how ready this host is for kvidx; changes nothing. Exit code 0 always; read the WARN lines.
# Ends with a suggested pinning for the daemon's agents on this machine (YAML keys of --config; see tuning/README.md).
# Environment: KVIDX_WRITERS (writer threads to place, default 1), KVIDX_NIC (the engines' network interface,
# default: the interface of the default route), KVIDX_AERON=1 (place an Aeron ingest agent too), KVIDX_SYSFS (where
# sysfs is, default /sys: point it at a copy of another machine's to see its suggestion).
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
ok "memlock limit: $limit (mlockIndex: true needs it to cover the index file; LimitMEMLOCK= in the unit)"

# --- Suggested pinning -------------------------------------------------------------------------------------------
# Expands a kernel CPU list ("0-3,8,10-11") into one CPU per line.
expand() {
    local part
    for part in ${1//,/ }; do
        case "$part" in
            *-*) seq "${part%-*}" "${part#*-}";;
            ?*) echo "$part";;
        esac
    done
}
sys=${KVIDX_SYSFS:-/sys}
online=$(expand "$(cat "$sys"/devices/system/cpu/online 2>/dev/null || echo 0-$((cpus - 1)))")
# Core 0 (and its hyperthread siblings) stays with the OS: interrupts, timers, the JVM's own threads.
housekeeping=$(expand "$(cat "$sys"/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo 0)")
isolated=$(cat "$sys"/devices/system/cpu/isolated 2>/dev/null)
if [ -n "$isolated" ]; then
    pool=$(expand "$isolated"); why="isolated cpus $isolated"
else
    pool=$online; why="online cpus minus core 0 (no isolcpus=)"
fi
pool=$(comm -23 <(echo "$pool" | sort) <(echo "$housekeeping" | sort) | sort -n)
nic=${KVIDX_NIC:-$(ip route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1); exit}')}
node=$(cat "$sys/class/net/$nic/device/numa_node" 2>/dev/null || echo -1)
if [ -n "$nic" ] && [ "$node" -ge 0 ] 2>/dev/null; then
    local_cpus=$(expand "$(cat "$sys/devices/system/node/node$node/cpulist")")
    near=$(comm -12 <(echo "$pool" | sort) <(echo "$local_cpus" | sort) | sort -n)
    if [ -n "$near" ]; then pool=$near; why="$why, on NUMA node $node of $nic"; fi
fi
# One CPU per physical core: a hyperthread sibling of a chosen CPU would share its core's caches and ports.
chosen=()
for cpu in $pool; do
    siblings=$(expand "$(cat "$sys/devices/system/cpu/cpu$cpu/topology/thread_siblings_list" 2>/dev/null || echo "$cpu")")
    taken=0
    for c in "${chosen[@]}"; do
        if echo "$siblings" | grep -qx "$c"; then taken=1; fi
    done
    [ "$taken" = 0 ] && chosen+=("$cpu")
done
writers=${KVIDX_WRITERS:-1}
[ "$writers" -ge 1 ] 2>/dev/null || writers=1
needed=$((1 + writers + ${KVIDX_AERON:-0}))
echo
echo "# Suggested pinning for this machine ($why; one core per agent, core 0 left to the OS)."
echo "# Put it in the daemon's --config file, or pass the same as --zmq-ingest-cpu, --writer-cpus, ..."
if [ "${#chosen[@]}" -lt "$needed" ]; then
    echo "# Only ${#chosen[@]} free core(s) for $needed agent(s): pinning would make agents share a core; keep none."
    echo "zmqIngestCpu: none"
    echo "writerCpus: none"
    echo "idleStrategy: backoff"
else
    i=0
    echo "zmqIngestCpu: ${chosen[$i]}"; i=$((i + 1))
    if [ "${KVIDX_AERON:-0}" = 1 ]; then echo "aeronIngestCpu: ${chosen[$i]}"; i=$((i + 1)); fi
    list=$(IFS=,; echo "${chosen[*]:$i:$writers}")
    echo "writers: $writers"
    echo "writerCpus: [${list//,/, }]"
    # JeroMQ's I/O threads decode the engines' frames: a spare core when there is one, else core 0's, never a writer's.
    spare=${chosen[$((i + writers))]:-}
    if [ -n "$spare" ]; then echo "zmqIoCpus: [$spare]"; else echo "zmqIoCpus: [${housekeeping%%$'\n'*}]"; fi
    # Spinning only pays on cores nothing else runs on.
    if [ -n "$isolated" ]; then echo "idleStrategy: busy-spin"; else echo "idleStrategy: backoff"; fi
fi
echo "maintenanceCpu: none          # heartbeats and sweeps: let the OS place it"
echo "maintenanceIdle: sleep-1ms"
