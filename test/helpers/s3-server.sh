#!/usr/bin/env bash
# The S3 server the bucket-archive tests run against: Debian's Ceph on loopback, one monitor, one
# OSD keeping its data in memory, one RADOS gateway (radosgw) answering S3 on PORT.
#   s3-server.sh start DIR PORT   prints the endpoint once the gateway answers (about 13 s)
#   s3-server.sh stop DIR         ends what start began, by the pid files under DIR/run
# S3_MEMSTORE_BYTES sets how much the OSD may hold in memory (default 2 GiB; benches want more).
# Packages: ceph-mon ceph-osd radosgw uuid-runtime (.ci/run installs them).
# Two settings matter beyond the obvious: without authentication every messenger mode must be crc
# (else the gateway waits 300 s on its first monitor request), and a cluster of one OSD needs pools
# of size 1 placed with chooseleaf type 0.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
port=${3:-7480}
if [ -z "$cmd" ] || [ -z "$dir" ]; then echo "usage: s3-server.sh start DIR PORT | stop DIR" >&2; exit 2; fi

stop() {
  local pids p alive
  pids=$(cat "$dir"/run/*.pid 2>/dev/null || true)
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 1 40); do
    alive=
    for p in $pids; do if kill -0 "$p" 2>/dev/null; then alive=1; fi; done
    if [ -z "$alive" ]; then return 0; fi
    sleep 0.25
  done
  for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
}

case "$cmd" in
  stop) stop; exit 0 ;;
  start) ;;
  *) echo "s3-server.sh: unknown command $cmd" >&2; exit 2 ;;
esac

for tool in radosgw ceph-mon ceph-osd uuidgen; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install -y ceph-mon ceph-osd radosgw uuid-runtime)" >&2; exit 3; }
done
mon=$((port + 30000))
mkdir -p "$dir"/run "$dir"/log "$dir"/mon.a "$dir"/osd.0
cd "$dir"
fsid=$(uuidgen)
cat > ceph.conf <<CONF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon,v1:127.0.0.1:$((mon + 1))]
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms cluster mode = crc
ms service mode = crc
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = ${S3_MEMSTORE_BYTES:-2147483648}
mon data avail warn = 1
mon data avail crit = 1
run dir = $dir/run
log file = $dir/log/\$name.log
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
keyring = $dir/keyring
mon data = $dir/mon.\$id
osd data = $dir/osd.\$id
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$port
CONF
ceph-authtool --create-keyring keyring --gen-key -n mon. --cap mon 'allow *' >/dev/null
monmaptool --create --addv a "[v2:127.0.0.1:$mon,v1:127.0.0.1:$((mon + 1))]" --fsid "$fsid" monmap >/dev/null
ceph-mon -c ceph.conf --mkfs -i a --monmap monmap --keyring keyring
ceph-mon -c ceph.conf -i a
osd_uuid=$(uuidgen)
osd_id=$(ceph -c ceph.conf osd new "$osd_uuid")
ceph-osd -c ceph.conf -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" >/dev/null 2>&1
ceph-osd -c ceph.conf -i "$osd_id" >/dev/null 2>&1
radosgw -c ceph.conf -n client.rgw.a
radosgw-admin -c ceph.conf user create --uid=test --display-name=test --access-key=TESTKEY --secret=TESTSECRET >/dev/null 2>&1
for _ in $(seq 1 120); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" = 200 ]; then
    echo "http://127.0.0.1:$port"
    exit 0
  fi
  sleep 0.5
done
echo "the gateway did not answer on 127.0.0.1:$port within 60 s; its logs are in $dir/log" >&2
stop
exit 1
