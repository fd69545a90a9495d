#!/usr/bin/env bash
# e2e-nats.sh starts a real `fleetd up`, appends events through fleetd, and
# reads them back with the stock nats CLI (stream view and sub --stream --all).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
bin="$work/fleetd"
go build -o "$bin" ./cmd/fleetd
port=$(( 20000 + RANDOM % 20000 ))
url="nats://127.0.0.1:$port"
"$bin" up --data-dir "$work/data" --listen "127.0.0.1:$port" --http "127.0.0.1:$(( port + 1 ))" --no-herdr --host ci >"$work/up.log" 2>&1 &
up=$!
cleanup() { kill "$up" 2>/dev/null || true; wait "$up" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do grep -q "up on host" "$work/up.log" && break; sleep 0.1; done
grep -q "up on host" "$work/up.log" || { cat "$work/up.log"; exit 1; }

# Append: fleetd itself records the host coming up and, on a clean stop,
# going down; a second run appends again.
kill -INT "$up"; wait "$up" || true
"$bin" up --data-dir "$work/data" --listen "127.0.0.1:$port" --http "127.0.0.1:$(( port + 1 ))" --no-herdr --host ci >"$work/up.log" 2>&1 &
up=$!
for _ in $(seq 100); do grep -q "up on host" "$work/up.log" && break; sleep 0.1; done

export HOME="$work/home"; mkdir -p "$HOME"
sub=$(timeout 20 nats --server "$url" sub --stream FLEET --all --count 3 'fleet.host.>' 2>&1)
echo "$sub"
for kind in up down; do
	grep -q "fleet.host.ci.$kind" <<<"$sub" || { echo "nats sub did not show fleet.host.ci.$kind"; exit 1; }
done
# stream view pages interactively and wants a terminal: give it one.
view=$(timeout 20 script -qec "nats --server $url stream view FLEET --subject 'fleet.host.ci.>'" /dev/null </dev/null 2>&1 || true)
echo "$view"
grep -q '"type":"fleet.host.down"' <<<"$view" || { echo "nats stream view did not show the host down event"; exit 1; }
tail=$("$bin" tail --nats "$url" --since all --no-follow)
echo "$tail"
[[ $(grep -c ' host ' <<<"$tail") -ge 3 ]] || { echo "fleetd tail shows fewer than 3 host events"; exit 1; }
echo "e2e-nats: ok"
