#!/usr/bin/env bash
# Mounts a dedicated tmpfs with transparent huge pages for the kvidx index (default /dev/shm/kvidx), owned by the
# daemon's user and readable by its group only.
# Usage: sudo tuning/mount-index-tmpfs.sh [DIR] [SIZE]   e.g. sudo tuning/mount-index-tmpfs.sh /dev/shm/kvidx 2G
# Environment: KVIDX_USER (default kvidx), KVIDX_GROUP (default kvidx); both must exist (see tuning/README.md).
#
# The mount's root is mode 0750, owner KVIDX_USER, group KVIDX_GROUP: the daemon (running as KVIDX_USER) creates the
# cell directories in it, routers in KVIDX_GROUP can enter it and read the index, nobody else can even list it.
# Not 1777 (world-writable, as /dev/shm itself): any local user could then plant files or a cell directory of
# their own. Not 1770 either: group members only read, they never create entries here.
#
# The daemon madvise()s its mapping with MADV_HUGEPAGE; with huge=advise the index is backed by 2 MiB pages,
# so a query's random probes stop paying TLB misses. Undo with: umount DIR
set -euo pipefail
dir=${1:-/dev/shm/kvidx}
size=${2:-2G}
user=${KVIDX_USER:-kvidx}
group=${KVIDX_GROUP:-kvidx}
if [ "$(id -u)" != 0 ]; then echo "run as root" >&2; exit 1; fi
uid=$(getent passwd "$user" | cut -d: -f3) || true
gid=$(getent group "$group" | cut -d: -f3) || true
if [ -z "$uid" ] || [ -z "$gid" ]; then
    echo "user '$user' or group '$group' does not exist: create them first (tuning/README.md)" >&2
    exit 1
fi
if mountpoint -q "$dir"; then
    echo "$dir is already a mount: $(findmnt -no OPTIONS "$dir")"
    mode=$(stat -c %a "$dir")
    owner=$(stat -c %U:%G "$dir")
    if [ "$mode" != 750 ] || [ "$owner" != "$user:$group" ]; then
        echo "WARN  $dir is $mode $owner, expected 750 $user:$group: umount it and run this script again" >&2
    fi
    exit 0
fi
mkdir -p "$dir"
mount -t tmpfs -o "huge=advise,size=$size,mode=0750,uid=$uid,gid=$gid,nosuid,nodev,noexec" kvidx-index "$dir"
echo "mounted: $(findmnt -no SOURCE,FSTYPE,OPTIONS "$dir") ($(stat -c '%a %U:%G' "$dir"))"
