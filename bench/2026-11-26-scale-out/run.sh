#!/bin/sh
# Scale-out on one machine: the mixed workload against 1, 2 and 3 Coffer
# nodes on PostgreSQL metadata and a shared upstream (another Coffer in fs
# mode), each cluster behind nginx with docs/scale-out.md's configuration,
# and against a single-node Pebble Coffer, interleaved in one
# `coffer bench mixed` run. Every server is started here, on 127.0.0.1
# only, and stopped at the end by its PID.
#
#   CGO_ENABLED=0 go build -o /tmp/coffer-scale-out ./cmd/coffer
#   cd bench/2026-11-26-scale-out && OUT=run-1 ./run.sh
#
# Durability is every server's default: Coffer fsyncs blocks and commits,
# PostgreSQL runs with fsync=on, synchronous_commit=on.
set -eu
OUT=${OUT:?set OUT to the results directory}
COFFER=${COFFER:-/tmp/coffer-scale-out}
DURATION=${DURATION:-50s} # per target, split over the rounds
ROUNDS=${ROUNDS:-2}
OBJECTS=${OBJECTS:-1000}
DATA=${DATA:-/var/tmp/coffer-scale-out}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
NGINX=${NGINX:-/usr/sbin/nginx}
PGPORT=7340

rm -rf "$DATA" && mkdir -p "$DATA" "$OUT/profile"
OUT=$(cd "$OUT" && pwd)
PIDS=""
PG_STARTED=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null || true; done
  if [ -n "$PG_STARTED" ]; then
    $PGRUN "$PGBIN/pg_ctl" stop -w -m fast -D "$DATA/pg/data" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT INT TERM

# PostgreSQL refuses to run as root: as root, run it as postgres (or nobody).
PGRUN=""
if [ "$(id -u)" = 0 ]; then
  PGUSER_OS=postgres
  id postgres >/dev/null 2>&1 || PGUSER_OS=nobody
  PGRUN="setpriv --reuid=$PGUSER_OS --regid=$(id -g $PGUSER_OS) --init-groups"
fi
mkdir -p "$DATA/pg"
[ -z "$PGRUN" ] || chown "$PGUSER_OS" "$DATA/pg"
$PGRUN "$PGBIN/initdb" -D "$DATA/pg/data" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$DATA/pg/initdb.log"
# Defaults (fsync, synchronous_commit, shared_buffers 128MB) except the
# connection limit: 6 nodes × 16 pooled connections plus their LISTENs.
cat >>"$DATA/pg/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$DATA/pg'
port = $PGPORT
max_connections = 200
CONF
$PGRUN "$PGBIN/pg_ctl" start -w -t 60 -D "$DATA/pg/data" -l "$DATA/pg/log" >/dev/null
PG_STARTED=1
PG_PID=$(head -n 1 "$DATA/pg/data/postmaster.pid")
PGCONN="host=$DATA/pg port=$PGPORT user=postgres dbname=postgres sslmode=disable"
for s in n1 n2 n3; do
  $PGRUN "$PGBIN/psql" -q -h "$DATA/pg" -p $PGPORT -U postgres -d postgres -c "CREATE SCHEMA $s" >/dev/null
done

export COFFER_ROOT_ACCESS_KEY=benchak COFFER_ROOT_SECRET_KEY=benchsecretkey00
# started NAME CMD…: runs CMD in the background, logging to $DATA/NAME.log,
# and records its PID under NAME.
started() {
  name=$1; shift
  "$@" >"$DATA/$name.log" 2>&1 &
  eval "PID_$name=$!"
  PIDS="$PIDS $!"
  echo "$name $!" >>"$DATA/pids"
}

# The upstream: a Coffer in its default fs mode, default durability.
mkdir -p "$DATA/upstream"
started upstream "$COFFER" serve --storage-path "$DATA/upstream" --address 127.0.0.1:7301 --console-address ""
# The single Pebble node, default settings.
mkdir -p "$DATA/pebble"
started pebble "$COFFER" serve --storage-path "$DATA/pebble" --address 127.0.0.1:7311 --console-address ""
sleep 2
# The upstream bucket for every cluster's blocks (curl signs SigV4).
curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "benchak:benchsecretkey00" \
  -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
  -X PUT http://127.0.0.1:7301/blocks >/dev/null

# Three clusters on one PostgreSQL and one upstream bucket, each in a
# schema and under a prefix of its own: n1 = one node, n2 = two, n3 = three.
export COFFER_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
export COFFER_BLOB_S3_SECRET_KEY=benchsecretkey00
port=7320
for c in 1 2 3; do
  i=1
  while [ $i -le $c ]; do
    port=$((port + 1))
    mkdir -p "$DATA/n$c-$i"
    pprof=""
    [ $c != 1 ] || pprof="--pprof --pprof-host 127.0.0.1 --pprof-port 7350" # profiled after the run
    COFFER_META_POSTGRES_URL="$PGCONN search_path=n$c" \
      started "n${c}_$i" "$COFFER" serve --storage-path "$DATA/n$c-$i" --address 127.0.0.1:$port --console-address "" $pprof \
      --meta.kind postgres --blob.kind s3 --blob.s3.endpoint http://127.0.0.1:7301 --blob.s3.bucket blocks \
      --blob.s3.prefix "n$c/" --blob.s3.access-key benchak
    echo "n$c 127.0.0.1:$port" >>"$DATA/nodes"
    i=$((i + 1))
    [ $c = 1 ] || [ $i != 2 ] || sleep 1 # the first node of a schema migrates it alone
  done
done

# nginx: docs/scale-out.md's upstream and server blocks, one per cluster
# (ports 7331–7333), in the foreground with Debian's default process model
# (a master and worker_processes auto = one worker per core).
mkdir -p "$DATA/nginx"
{
  cat <<CONF
daemon off;
worker_processes auto;
pid $DATA/nginx/nginx.pid;
error_log $DATA/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $DATA/nginx/client_body;
    proxy_temp_path $DATA/nginx/proxy;
    fastcgi_temp_path $DATA/nginx/fastcgi;
    uwsgi_temp_path $DATA/nginx/uwsgi;
    scgi_temp_path $DATA/nginx/scgi;
CONF
  for c in 1 2 3; do
    echo "    upstream coffer$c {"
    awk -v c="n$c" '$1 == c { print "        server " $2 " max_fails=1 fail_timeout=5s;" }' "$DATA/nodes"
    cat <<CONF
        keepalive 32;
        keepalive_timeout 50s;
    }
    server {
        listen 127.0.0.1:733$c;
        client_max_body_size 0;
        proxy_request_buffering off;
        proxy_buffering off;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host \$http_host;
        proxy_read_timeout 300s;
        proxy_send_timeout 300s;
        location / { proxy_pass http://coffer$c; }
    }
CONF
  done
  echo "}"
} >"$DATA/nginx/nginx.conf"
cp "$DATA/nginx/nginx.conf" "$OUT/nginx.conf"
started nginx "$NGINX" -p "$DATA/nginx" -c "$DATA/nginx/nginx.conf" -e "$DATA/nginx/error.log"
sleep 3
for p in 7301 7311 7331 7332 7333; do
  curl -sf -o /dev/null "http://127.0.0.1:$p/_coffer/health/ready" || { echo "127.0.0.1:$p not ready" >&2; exit 1; }
done

cat >"$DATA/targets.toml" <<'TOML'
[[target]]
name = "pebble-1"
url = "http://127.0.0.1:7311"

[[target]]
name = "pg-1"
url = "http://127.0.0.1:7331"

[[target]]
name = "pg-2"
url = "http://127.0.0.1:7332"

[[target]]
name = "pg-3"
url = "http://127.0.0.1:7333"
TOML
cp "$DATA/targets.toml" "$OUT/targets.toml"

# cpu: one line per measured process — name, pid, CPU ticks (user +
# system) — for the Coffer servers and the generator (named in $DATA/pids),
# nginx's master and workers, PostgreSQL's postmaster (with its exited
# children's ticks) and its children. Shell builtins only: the sampler
# must not fork a process per process each second on a 2-core machine.
cpu() {
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue # exited meanwhile
    pid=${line%% *}
    rest=${line##*) } # the fields after the command name
    # shellcheck disable=SC2086
    set -- $rest
    ppid=$2 ticks=$((${12} + ${13}))
    name=""
    case " $PIDS_NAMED " in *" $pid="*)
      name=${PIDS_NAMED##* $pid=}; name=${name%% *} ;;
    esac
    if [ "$pid" = "$PG_PID" ]; then name=postgres ticks=$((ticks + ${14} + ${15}))
    elif [ "$ppid" = "$PG_PID" ]; then name=postgres
    elif [ "$ppid" = "$PID_nginx" ]; then name=nginx
    fi
    [ -z "$name" ] || echo "$name $pid $ticks"
  done
}
PIDS_NAMED=$(awk '{printf " %s=%s", $2, $1}' "$DATA/pids")
uptime >"$OUT/load.txt"
"$COFFER" bench sys --dir "$DATA" >"$OUT/sys.md" 2>&1 || true
cpu >"$OUT/cpu-before.txt"
"$COFFER" bench mixed --targets "$DATA/targets.toml" --baseline pebble-1 \
  --access-key benchak --secret-key benchsecretkey00 \
  --size 100KiB --workers 16 --objects "$OBJECTS" --duration "$DURATION" --rounds "$ROUNDS" \
  --gobench --out "$OUT/mixed" >"$OUT/output.txt" 2>&1 &
BENCH=$!
PIDS_NAMED="$PIDS_NAMED $BENCH=bench"
# Every second: the CPU ticks of every process (cpu-samples.txt: seconds
# since the epoch, name, pid, ticks), from which the CPU of the shared
# processes (PostgreSQL, upstream, nginx) is attributed to the target that
# ran; every 10 s the load average.
n=0
while kill -0 $BENCH 2>/dev/null; do
  now=$(date +%s.%N)
  cpu | sed "s/^/$now /" >>"$OUT/cpu-samples.txt"
  [ $((n % 10)) != 0 ] || uptime >>"$OUT/load.txt"
  n=$((n + 1))
  sleep 1
done
wait $BENCH || { tail -n 30 "$OUT/output.txt" >&2; exit 1; }
uptime >>"$OUT/load.txt"
cpu >"$OUT/cpu-after.txt"

# Peak RSS (VmHWM) and proportional set size (Pss: shared pages divided
# between the processes that map them — PostgreSQL's shared buffers are in
# every backend's VmHWM) of every process.
cpu | while read -r name pid _; do
  hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
  pss=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
  echo "$name $pid $hwm $pss"
done >"$OUT/rss.txt"
echo "name pid VmHWM_KiB Pss_KiB" | cat - "$OUT/rss.txt" >"$OUT/rss.tmp" && mv "$OUT/rss.tmp" "$OUT/rss.txt"
"$PGBIN/postgres" --version >"$OUT/versions.txt"
"$NGINX" -v 2>>"$OUT/versions.txt"
"$COFFER" version >>"$OUT/versions.txt" 2>&1 || true
cp "$DATA/pids" "$DATA/nodes" "$OUT/"

# Where the CPU went while each target ran: every one-second interval is
# given to the target whose own nodes used the most CPU in it (pebble-1:
# the Pebble node; pg-N: the N nodes of that cluster), and every process's
# CPU in that interval is added to that target's row. Preparing and
# cleaning up the benchmark objects count with the target.
awk -v hz="$(getconf CLK_TCK)" '
function group(n) { sub(/_[0-9]+$/, "", n); return n }
{
  t = $1; g = group($2); pid = $3
  if (!(t in ts) && prev != "") dt[t] = t - prev
  if (!(t in ts)) prev = t
  if ((pid in last) && $4 >= last[pid]) d[t, g] += $4 - last[pid]
  last[pid] = $4; ts[t] = 1; groups[g] = 1
}
END {
  split("pebble n1 n2 n3", own, " ")
  split("pebble-1 pg-1 pg-2 pg-3", tname, " ")
  for (t in ts) {
    best = 0; who = ""
    for (i = 1; i <= 4; i++) if (d[t, own[i]] > best) { best = d[t, own[i]]; who = i }
    if (best < hz / 10) continue # under 0.1 s: between targets
    secs[who] += dt[t]
    for (g in groups) { c[who, g] += d[t, g]; tot[who] += d[t, g] }
  }
  print "| target | wall seconds | its Coffer nodes | PostgreSQL | upstream Coffer | nginx | generator | all (cores busy) |"
  print "|---|---:|---:|---:|---:|---:|---:|---:|"
  for (i = 1; i <= 4; i++) {
    if (!secs[i]) continue
    printf "| %s | %.0f | %.1f s (%.0f %%) | %.1f s (%.0f %%) | %.1f s (%.0f %%) | %.1f s (%.0f %%) | %.1f s (%.0f %%) | %.1f s (%.2f) |\n", tname[i], secs[i],
      c[i, own[i]] / hz, 100 * c[i, own[i]] / tot[i], c[i, "postgres"] / hz, 100 * c[i, "postgres"] / tot[i],
      c[i, "upstream"] / hz, 100 * c[i, "upstream"] / tot[i], c[i, "nginx"] / hz, 100 * c[i, "nginx"] / tot[i],
      c[i, "bench"] / hz, 100 * c[i, "bench"] / tot[i], tot[i] / hz, tot[i] / hz / secs[i]
  }
}' "$OUT/cpu-samples.txt" >"$OUT/cpu.md"
cat "$OUT/cpu.md"

# Peak RSS per role: the sum of VmHWM over a role's processes (and the
# largest), and the sum of Pss at the end.
awk 'NR > 1 { g = $1; sub(/_[0-9]+$/, "", g); n[g]++; h[g] += $3; p[g] += $4; if ($3 > m[g]) m[g] = $3 }
END {
  print "| processes | count | VmHWM summed | largest VmHWM | Pss summed (end) |"
  print "|---|---:|---:|---:|---:|"
  split("pebble n1 n2 n3 upstream postgres nginx", order, " ")
  for (i = 1; i <= 7; i++) { g = order[i]; if (n[g]) printf "| %s | %d | %.0f MiB | %.0f MiB | %.0f MiB |\n", g, n[g], h[g] / 1024, m[g] / 1024, p[g] / 1024 }
}' "$OUT/rss.txt" >"$OUT/rss.md"
cat "$OUT/rss.md"

# Where a node's own CPU goes: the one-node cluster alone for 20 s more,
# its node profiled (top functions in profile/profile-top.txt).
"$COFFER" bench mixed --target pg-1=http://127.0.0.1:7331 \
  --access-key benchak --secret-key benchsecretkey00 \
  --size 100KiB --workers 16 --objects "$OBJECTS" --duration 20s \
  --profile --pprof http://127.0.0.1:7350 --out "$OUT/profile" >"$OUT/profile/output.txt" 2>&1 ||
  tail -n 20 "$OUT/profile/output.txt" >&2
