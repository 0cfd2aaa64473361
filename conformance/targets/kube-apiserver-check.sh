#!/bin/sh
# The configuration checker of conformance/targets/kube-apiserver.yaml: kube-apiserver has none, so
# each file is handed to the flag that reads its kind and kube-apiserver is started on it. A file it
# refuses ends the process at start with the reason (exit 1, one "path: reason" per line); a file it
# accepts lets it go on past them, and it is stopped there (exit 0). Its storage points nowhere and
# its port is never listened on.
set -u
peers=${ORCH_PEERS:-$HOME/.cache/orch-peers/v1.34.4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null || exit 2
flags=
for file in "$@"; do
  kind=$(sed -n 's/.*"kind"[": ]*"\([A-Za-z]*\)".*/\1/p; s/^kind: *\([A-Za-z]*\).*/\1/p' "$file" | head -n1)
  case $kind in
  AuthenticationConfiguration) flags="$flags --authentication-config=$file" ;;
  AuthorizationConfiguration) flags="$flags --authorization-config=$file" ;;
  AdmissionConfiguration) flags="$flags --admission-control-config-file=$file" ;;
  EncryptionConfiguration) flags="$flags --encryption-provider-config=$file" ;;
  TracingConfiguration) flags="$flags --tracing-config-file=$file" ;;
  *) echo "$file: kind: unknown kind \"$kind\""; exit 1 ;;
  esac
done
issuer=https://kubernetes.default.svc.cluster.local
# shellcheck disable=SC2086
"$peers/kube-apiserver" --bind-address=127.0.0.1 --secure-port=$((20000 + $$ % 20000)) --cert-dir="$work/pki" \
  --etcd-servers=http://127.0.0.1:1 --service-account-issuer=$issuer --api-audiences=$issuer \
  --service-account-key-file="$work/sa.key" --service-account-signing-key-file="$work/sa.key" \
  $flags >"$work/log" 2>&1 &
pid=$!
i=0
while kill -0 $pid 2>/dev/null; do
  # Past every configuration file (authentication, authorization, admission built), kube-apiserver
  # picks its endpoint reconciler. Its storage is nowhere, so it is killed, not asked to drain.
  if grep -q "Using reconciler" "$work/log"; then
    kill -KILL $pid; wait $pid 2>/dev/null; exit 0
  fi
  i=$((i+1)); [ $i -le 200 ] || { kill -KILL $pid; wait $pid 2>/dev/null; echo "kube-apiserver neither refused nor took its files within 20s"; exit 2; }
  sleep 0.1
done
wait $pid
# One problem a line: kube-apiserver joins them as "[a: x, b: y]" in one error.
sed -n 's/.*"command failed" err="\(.*\)"$/\1/p' "$work/log" |
  sed 's/\\"/"/g; s/^\[//; s/: \[\([a-zA-Z]\)/: \1/; s/, \([a-zA-Z][^ ,]*: \)/\n\1/g'
grep -q '"command failed"' "$work/log" || cat "$work/log"
exit 1
