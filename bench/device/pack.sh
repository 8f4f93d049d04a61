#!/usr/bin/env bash
# Packs what issue 36's 16-core measurements need for a host with no Java, no Maven and no network: a jlink'd JDK 25
# runtime, the bench's module jars and the libraries those measurements load (not the tokenizer, the endpoint
# picker's gRPC and Envoy API, Kubernetes discovery or NATS), and run.sh, as one tar.xz of about 55 MB under
# bench/target/device/ (small enough for the device tool's 64 MiB carry).
#
#   bench/device/pack.sh       # builds the jars first when a source changed (through ./kvidx)
#
# Then, on the host: tar -xJf kvidx-device.tar.xz -C /tmp && /tmp/kvidx-device/run.sh [--quick]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT_DIR="$ROOT/bench/target/device"
STAGE="$OUT_DIR/kvidx-device"

# ./kvidx finds the JDK 25 and rebuilds (and installs) the modules when a source changed; bench -h prints the usage.
"$ROOT/kvidx" bench -h > /dev/null 2>&1 || true
JAVA_HOME="$("$ROOT/kvidx" java-home)"
export JAVA_HOME
[ -x "$JAVA_HOME/bin/jlink" ] || { echo "pack.sh: $JAVA_HOME has no jlink" >&2; exit 1; }

rm -rf "$STAGE" "$OUT_DIR/kvidx-device.tar.xz"
mkdir -p "$STAGE/lib"
# The bench's runtime class path, less what none of run.sh's steps loads. Resolved in the reactor (-am), so the kvidx
# modules come from this checkout (their target/classes or jars: taken as the module jars ./kvidx just built).
(cd "$ROOT" && mvn -B -ntp -q -pl bench -am dependency:build-classpath -Dmdep.includeScope=runtime \
    -Dmdep.outputFile="$OUT_DIR/classpath.txt")
tr ':' '\n' < "$OUT_DIR/classpath.txt" \
    | grep -v -E '/(io/envoyproxy|io/grpc|dev/cel|io/fabric8|ai/djl|com/google/protobuf|com/google/api|io/perfmark|com/hubspot|org/javassist|com/google/re2j|ch/obermuhlner|commons-net|com/googlecode|org/immutables|org/derive4j|com/google/android|net/jqwik|org/bouncycastle|io/nats)/' \
    | grep -v -E '(kvidx-(epp|tokenize|discovery)-|/(epp|tokenize|discovery)/target/)' \
    | while read -r entry; do
        [ -n "$entry" ] || continue
        module=""
        case "$entry" in
            "$ROOT"/*/target/classes) module="$(basename "$(dirname "$(dirname "$entry")")")" ;;
            */kvidx-*-0.1.0-SNAPSHOT.jar) module="$(basename "$entry" | sed 's/^kvidx-\(.*\)-0\.1\.0-SNAPSHOT\.jar$/\1/')" ;;
        esac
        if [ -n "$module" ]; then
            jar="$ROOT/$module/target/kvidx-$module-0.1.0-SNAPSHOT.jar"
            [ -f "$jar" ] || { echo "pack.sh: $jar missing (run ./kvidx build)" >&2; exit 1; }
            cp "$jar" "$STAGE/lib/"
        else
            cp "$entry" "$STAGE/lib/"
        fi
    done
cp "$ROOT/bench/target/kvidx-bench-0.1.0-SNAPSHOT.jar" "$STAGE/lib/"
# The modules the benches load (java.desktop: the trace report's charts; jdk.jfr: profiles on request).
"$JAVA_HOME/bin/jlink" --add-modules java.base,java.desktop,java.management,java.net.http,java.sql,\
jdk.httpserver,jdk.management,jdk.security.auth,jdk.unsupported,jdk.jfr,jdk.crypto.ec \
    --strip-debug --no-man-pages --no-header-files --output "$STAGE/jre"
cp "$ROOT/bench/device/run.sh" "$STAGE/run.sh"
chmod +x "$STAGE/run.sh"
tar -C "$OUT_DIR" -c kvidx-device | xz -T0 -9 > "$OUT_DIR/kvidx-device.tar.xz"
ls -l "$OUT_DIR/kvidx-device.tar.xz"
