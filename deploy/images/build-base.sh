#!/usr/bin/env bash
# Builds the files of the images' base layer, for Jib's `scratch` base (no registry to pull a base from):
#   OUT/opt/java/openjdk   a jlink'd JDK runtime with the modules jdeps finds in the deployable's jars
#   OUT/lib..., OUT/lib64  glibc's loader and the shared libraries the runtime (and the jars' native libraries) need
#   OUT/etc/passwd, group  the non-root user 65532 (home /tmp, the pod's emptyDir)
#   OUT/tmp                the mount point of /tmp
#
#   build-base.sh OUT JDK MODE JAR...
#     MODE=jlink  build it; MODE=skip  leave OUT empty (a public base image, -Djib.from.image=..., brings Java)
# Extra modules: KVIDX_EXTRA_MODULES (comma-separated). Native libraries inside the jars (native/lib/linux-x86_64/...)
# are ldd'd too, so their libstdc++ / libgcc_s come along.
set -euo pipefail
OUT="$1"; JDK="$2"; MODE="$3"; shift 3
rm -rf "$OUT"; mkdir -p "$OUT"
if [[ "$MODE" == skip ]]; then
    echo "build-base: public base image chosen; no jlink layer"
    exit 0
fi
[[ "$(uname -m)" == x86_64 ]] || { echo "build-base: only linux x86-64 hosts are supported" >&2; exit 1; }

modules="$("$JDK/bin/jdeps" --ignore-missing-deps --print-module-deps --multi-release 25 -q "$@" | tail -n1)"
modules="$modules${KVIDX_EXTRA_MODULES:+,$KVIDX_EXTRA_MODULES}"
echo "build-base: jlink modules $modules"
"$JDK/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress zip-6 \
    --output "$OUT/opt/java/openjdk"

# Shared libraries: what ldd reports for the runtime's binaries and the jars' linux-x86_64 native libraries. The
# AWT-on-X11, splash screen and sound libraries are left out: the JVMs run headless (X11 and ALSA are not copied).
scratch="$(mktemp -d)"; trap 'rm -rf "$scratch"' EXIT
objs=("$OUT/opt/java/openjdk/bin/java")
while IFS= read -r f; do objs+=("$f"); done < <(find "$OUT/opt/java/openjdk/lib" -name '*.so' \
    ! -name libawt_xawt.so ! -name libjawt.so ! -name libsplashscreen.so ! -name libjsound.so)
for jar in "$@"; do
    d="$scratch/$(basename "$jar")"; mkdir -p "$d"
    # unzip (native) rather than `jar`, a JVM start per jar; only the linux-x86_64 shared objects are listed.
    sos="$(unzip -Z1 "$jar" 2>/dev/null | grep -E '^(native/lib/linux-x86_64/|com/sun/jna/linux-x86-64/|META-INF/native/).*\.so$' \
        | grep -v -E 'aarch64|musl' || true)"
    [[ -n "$sos" ]] && (cd "$d" && unzip -q -o "$jar" $sos)
    while IFS= read -r f; do objs+=("$f"); done < <(find "$d" -name '*.so')
done
libs="$(for o in "${objs[@]}"; do LD_LIBRARY_PATH="$OUT/opt/java/openjdk/lib:$OUT/opt/java/openjdk/lib/server" ldd "$o" 2>/dev/null; done \
    | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/lib64\/[^ ]*\) .*/\1/p' | grep -v "^$OUT" | sort -u)"
# Name resolution (files, dns) for hosts and Services.
libs="$libs $(ls /lib/x86_64-linux-gnu/libnss_files.so.2 /lib/x86_64-linux-gnu/libnss_dns.so.2 /lib/x86_64-linux-gnu/libresolv.so.2 2>/dev/null || true)"
for l in $libs; do
    real="$(readlink -f "$l")"
    mkdir -p "$OUT$(dirname "$l")"
    cp "$real" "$OUT$l"
    echo "build-base: lib $l ($(basename "$real"))"
done

mkdir -p "$OUT/etc" "$OUT/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nkvidx:x:65532:65532:kvidx:/tmp:/sbin/nologin\n' > "$OUT/etc/passwd"
printf 'root:x:0:\nkvidx:x:65532:\n' > "$OUT/etc/group"
printf 'hosts: files dns\n' > "$OUT/etc/nsswitch.conf"
chmod 1777 "$OUT/tmp"
du -sh "$OUT" | sed 's/^/build-base: /'
