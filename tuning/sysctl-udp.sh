#!/usr/bin/env bash
# Raises socket buffer limits so Aeron UDP subscriptions (SBE events from remote engines) do not drop under
# bursts. Usage: sudo tuning/sysctl-udp.sh [--persist]   (--persist writes /etc/sysctl.d/60-kvidx.conf)
set -euo pipefail
if [ "$(id -u)" != 0 ]; then echo "run as root" >&2; exit 1; fi
settings=(net.core.rmem_max=8388608 net.core.wmem_max=8388608 net.core.rmem_default=2097152 net.core.wmem_default=2097152)
for s in "${settings[@]}"; do sysctl -w "$s"; done
if [ "${1:-}" = "--persist" ]; then
    printf '%s\n' "${settings[@]}" > /etc/sysctl.d/60-kvidx.conf
    echo "written /etc/sysctl.d/60-kvidx.conf"
fi
