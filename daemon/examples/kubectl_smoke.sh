#!/usr/bin/env bash
# Drive the `serve` example with the real kubectl: api-resources, get, apply (twice), get -w,
# patch (merge, json, strategic, status), describe, wait --for=jsonpath, delete, and the 401s.
# Usage: bash daemon/examples/kubectl_smoke.sh   (needs kubectl on PATH; builds the example)
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build -q -p drydock-daemon --example serve
port=$((20000 + RANDOM % 20000))
token="smoke-$RANDOM$RANDOM"
target/debug/examples/serve "127.0.0.1:$port" "$token" --tls >/tmp/drydock-smoke-serve.log 2>&1 &
server=$!
trap 'kill $server' EXIT
sleep 1
export KUBECONFIG=/dev/null
k() { kubectl --server "https://127.0.0.1:$port" --insecure-skip-tls-verify --token "$token" "$@"; }
manifest=$(mktemp --suffix .yaml)
cat >"$manifest" <<'YAML'
apiVersion: v1
kind: Namespace
metadata:
  name: demo
---
apiVersion: drydock.dev/v1
kind: ContainerImage
metadata:
  name: busybox
  namespace: demo
spec:
  image: busybox:1.36
---
apiVersion: drydock.dev/v1
kind: PhysicalContainer
metadata:
  name: web
  namespace: demo
  labels: {app: web}
spec:
  image: busybox:1.36
  command: ["sleep", "1000"]
YAML
set -x
k api-resources
k get ns
! kubectl --server "https://127.0.0.1:$port" --insecure-skip-tls-verify --token wrong get ns
k apply -f "$manifest"
k apply -f "$manifest" | grep -c unchanged
sed -i 's/app: web}/app: web, tier: front}/' "$manifest"
k apply -f "$manifest" | grep 'physicalcontainer.drydock.dev/web configured'
k get ns
k -n demo get pc,img -o wide
k -n demo get pc -l 'app=web,tier in (front,back),!gone' --show-labels | grep web
k -n demo get pc -w --request-timeout=5s >/tmp/drydock-smoke-watch.log 2>&1 &
k -n demo wait pc/web --for=jsonpath='{.status.phase}'=Running --timeout=20s &
waiter=$!
sleep 1
k -n demo patch pc web --type=merge -p '{"metadata":{"labels":{"x":"1"}}}'
k -n demo patch pc web --type=json -p '[{"op":"add","path":"/metadata/labels/y","value":"2"}]'
k -n demo patch pc web -p '{"metadata":{"labels":{"z":"3"}}}'
k -n demo patch pc web --subresource=status --type=merge -p '{"status":{"phase":"Running","runtimeId":"0123456789abcdef"}}'
wait $waiter
k -n demo describe pc web
k -n demo get pc web -o jsonpath='{.metadata.labels}{"\n"}'
k -n demo delete pc web
k -n demo delete img busybox
sleep 1
cat /tmp/drydock-smoke-watch.log
k -n demo get pc
echo "kubectl smoke: all commands passed"
