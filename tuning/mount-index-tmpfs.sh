#!/usr/bin/env bash
# Mounts a dedicated tmpfs with transparent huge pages for the kvidx index (default /dev/shm/kvidx).
# Usage: sudo tuning/mount-index-tmpfs.sh [DIR] [SIZE]   e.g. sudo tuning/mount-index-tmpfs.sh /dev/shm/kvidx 2G
# The daemon madvise()s its mapping with MADV_HUGEPAGE; with huge=advise the index is backed by 2 MiB pages,
# so a query's random probes stop paying TLB misses. Undo with: umount DIR
set -euo pipefail
dir=${1:-/dev/shm/kvidx}
size=${2:-2G}
if [ "$(id -u)" != 0 ]; then echo "run as root" >&2; exit 1; fi
mkdir -p "$dir"
if mountpoint -q "$dir"; then
    echo "$dir is already a mount: $(findmnt -no OPTIONS "$dir")"
    exit 0
fi
mount -t tmpfs -o "huge=advise,size=$size,mode=1777" kvidx-index "$dir"
echo "mounted: $(findmnt -no SOURCE,FSTYPE,OPTIONS "$dir")"
