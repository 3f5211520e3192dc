#!/bin/sh
# The load test of notebooks/data/cluster-db at one cluster size K (NODES): a private
# PostgreSQL 15 cluster on 127.0.0.1:5495, K private Tomcat 10.1 nodes on 127.0.0.1:8196.. (each
# its own CATALINA_BASE, 4 request threads, a DBCP pool of 3 connections, serving
# setup/HotRow.java), a private Apache (event MPM, mod_proxy_balancer, byrequests) on
# 127.0.0.1:8195 in front, driven by JMeter 2.13 at several load levels (threads = users, think
# time uniform 250-750 ms).  Run from this folder:
#
#     NODES=2 ./run.sh
#
# writes ../k<K>/: users<N>.jtl, levels.csv (each level's start and what the host did),
# pg/users<N>.{before,after}.{pg_stat_statements,pg_stat_wal,pg_stat_database}.csv,
# postgresql.csv.gz (PostgreSQL's csvlog), access-node<I>.log.gz (each node's access log),
# sar.sadf.csv (CPU), sar-q.sadf.csv (run queue, load average), sar-d.sadf.csv (disks), and
# disturbed/ for a level repeated because other work disturbed it (level.py says when).
# Needs Debian's apache2, apache2-utils (ab), curl, tomcat10, libpostgresql-jdbc-java, postgresql-15,
# jmeter and jmeter-http, sysstat, a JDK (javac), and root (PostgreSQL runs as user postgres).
#
# LEVELS: "USERS:SECONDS ..." (a bare USERS runs DURATION_S seconds).
set -eu
NODES="${NODES:-1}"
case "$NODES" in 1|2|3) ;; *) echo "run.sh: NODES=$NODES: this test has 1, 2 or 3 nodes" >&2; exit 2 ;; esac
LAB=/tmp/cluster-db-lab
LEVELS="${LEVELS:-10 40 60 80 100 130 170}"
DURATION_S="${DURATION_S:-60}"
# the ground truth (HotRow.java): 30 ms outside the database, 4 ms of pg_sleep under the row lock
OUTSIDE_MS=30 UNDER_LOCK_S=0.004
# The host is shared with other work: the stack and JMeter run at this priority so that the
# other work delays them less.
NICE="${NICE:--10}"
# a level where other work used more than this share of the host is run once more (level.py)
DISTURBED_PCT=25
PGBIN=/usr/lib/postgresql/15/bin
PGPORT=5495
HERE=$(pwd)
OUT="$HERE/../k$NODES"
rm -rf $LAB "$OUT"
mkdir -p $LAB/logs $LAB/classes $LAB/pg "$OUT/pg"
chown postgres: $LAB/pg

# build the servlet and JMeter's starter
javac -d $LAB/classes -cp /usr/share/java/tomcat10-servlet-api.jar HotRow.java
CP=/usr/share/jmeter/bin/ApacheJMeter.jar:/usr/share/jmeter/lib/jorphan.jar:$(ls /usr/share/jmeter/lib/ext/*.jar | tr '\n' :)/usr/share/java/xstream.jar
javac -d $LAB -cp "$CP" PermitXStream.java

SAR=
# stop what this script started, also when a step fails
stop() {
  [ -z "$SAR" ] || kill $SAR 2>/dev/null || true
  [ ! -f $LAB/logs/httpd.pid ] || apache2 -f "$HERE/apache.conf" $DEFINES -k stop 2>/dev/null || true
  for PID in $(cat $LAB/logs/tomcat.pids 2>/dev/null); do kill "$PID" 2>/dev/null || true; done
  [ ! -f $LAB/pg/data/postmaster.pid ] || runuser -u postgres -- $PGBIN/pg_ctl -D $LAB/pg/data -m fast -w stop > /dev/null || true
}
DEFINES=
[ "$NODES" -lt 2 ] || DEFINES="-D NODES2"
[ "$NODES" -lt 3 ] || DEFINES="$DEFINES -D NODES3"
trap stop EXIT

# PostgreSQL: a fresh cluster per run, this folder's postgresql.conf included last
runuser -u postgres -- $PGBIN/initdb -D $LAB/pg/data -U postgres --auth=trust -E UTF8 \
  --locale=C.UTF-8 > $LAB/logs/initdb.out
cp postgresql.conf $LAB/pg/test.conf
chown postgres: $LAB/pg/test.conf
echo "include '$LAB/pg/test.conf'" >> $LAB/pg/data/postgresql.conf
nice -n "$NICE" runuser -u postgres -- $PGBIN/pg_ctl -D $LAB/pg/data -l $LAB/pg/pg.out -w start > /dev/null
sql() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $PGPORT -U postgres "$@"; }
sql -c "CREATE ROLE bank LOGIN" -c "CREATE DATABASE bank OWNER bank"
sql -d bank -c "CREATE EXTENSION pg_stat_statements"
sql -d bank -U bank -f schema.sql
head -1 $LAB/pg/data/postmaster.pid > $LAB/logs/stack.pids

# the Tomcat nodes: one CATALINA_BASE each, on 8196, 8197, 8198
: > $LAB/logs/tomcat.pids
I=1
while [ $I -le "$NODES" ]; do
  BASE=$LAB/node$I
  mkdir -p $BASE/conf $BASE/logs $BASE/work $BASE/temp $BASE/lib \
    $BASE/webapps/app/WEB-INF/classes $BASE/webapps/app/META-INF
  cp server.xml /usr/share/tomcat10/etc/web.xml /usr/share/tomcat10/etc/logging.properties \
    /usr/share/tomcat10/etc/catalina.properties $BASE/conf/
  cp context.xml $BASE/webapps/app/META-INF/
  cp web.xml $BASE/webapps/app/WEB-INF/
  cp $LAB/classes/HotRow.class $BASE/webapps/app/WEB-INF/classes/
  cp -L /usr/share/java/postgresql.jar $BASE/lib/
  nice -n "$NICE" java -Xms64m -Xmx256m -Dnode.port=$((8195 + I)) -Dpg.port=$PGPORT \
    -Dapp.outside.ms=$OUTSIDE_MS -Dapp.underlock.s=$UNDER_LOCK_S \
    -Dcatalina.home=/usr/share/tomcat10 -Dcatalina.base=$BASE \
    -Djava.io.tmpdir=$BASE/temp \
    -Djava.util.logging.config.file=$BASE/conf/logging.properties \
    -Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager \
    -cp /usr/share/tomcat10/bin/bootstrap.jar:/usr/share/tomcat10/bin/tomcat-juli.jar \
    org.apache.catalina.startup.Bootstrap start > $BASE/logs/tomcat.out 2>&1 &
  echo $! >> $LAB/logs/tomcat.pids
  I=$((I + 1))
done
cat $LAB/logs/tomcat.pids >> $LAB/logs/stack.pids
# wait until every node answers (at most 120 s each): a balancer member that refuses the first
# connection is disabled for 60 s (mod_proxy's retry), which would leave it out of the warm-up
I=1
while [ $I -le "$NODES" ]; do
  TRIES=0
  until curl -sf -o /dev/null http://127.0.0.1:$((8195 + I))/app/work; do
    TRIES=$((TRIES + 1))
    if [ $TRIES -ge 60 ]; then
      echo "run.sh: node $I (port $((8195 + I))) did not answer in 120 s, see $LAB/node$I/logs" >&2
      exit 1
    fi
    sleep 2
  done
  I=$((I + 1))
done
nice -n "$NICE" apache2 -f "$HERE/apache.conf" $DEFINES -k start
sleep 10
cat $LAB/logs/httpd.pid >> $LAB/logs/stack.pids
# warm the JITs (every node's, through the balancer) and Apache's first connections so that the
# first level does not measure the compiler: 600 requests per node, 8 at a time
ab -q -n $((600 * NODES)) -c 8 http://127.0.0.1:8195/app/work > $LAB/logs/warmup.txt
if grep -q -E '^(Non-2xx responses|Failed requests: +[1-9])' $LAB/logs/warmup.txt; then
  echo "run.sh: the warm-up had failures, see $LAB/logs/warmup.txt and $LAB/node*/logs" >&2
  exit 1
fi

# the database's statistics before or after a level: pg_stat_statements (this database's
# statements), pg_stat_wal, pg_stat_database (this database)
snapshot() {  # users, before|after, directory
  sql -d bank -c "\\copy (SELECT now() AS taken_at, s.toplevel, s.queryid, s.query, s.calls, s.total_exec_time, s.mean_exec_time, s.stddev_exec_time, s.min_exec_time, s.max_exec_time, s.rows, s.shared_blks_hit, s.shared_blks_read, s.shared_blks_dirtied, s.shared_blks_written, s.local_blks_hit, s.temp_blks_written, s.blk_read_time, s.blk_write_time, s.wal_records, s.wal_fpi, s.wal_bytes FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bank' ORDER BY s.queryid) TO STDOUT WITH (FORMAT csv, HEADER)" > "$3/users$1.$2.pg_stat_statements.csv"
  sql -d bank -c "\\copy (SELECT now() AS taken_at, * FROM pg_stat_wal) TO STDOUT WITH (FORMAT csv, HEADER)" > "$3/users$1.$2.pg_stat_wal.csv"
  sql -d bank -c "\\copy (SELECT now() AS taken_at, * FROM pg_stat_database WHERE datname = 'bank') TO STDOUT WITH (FORMAT csv, HEADER)" > "$3/users$1.$2.pg_stat_database.csv"
}

echo "load average at the start: $(cat /proc/loadavg)"
sar -u -q ALL -d 1 7200 -o $LAB/sa.bin > /dev/null 2>&1 &
SAR=$!
sleep 2
echo "users,duration_s,start_ms,nodes,attempt,kept,loadavg1_before,loadavg1_after,cpu_some_pct,host_busy_pct,stack_busy_pct,others_busy_pct" > "$OUT/levels.csv"
for LEVEL in $LEVELS; do
  N=${LEVEL%%:*}
  LENGTH_S=$DURATION_S
  [ "$N" = "$LEVEL" ] || LENGTH_S=${LEVEL#*:}
  python3 make_plan.py $N $LENGTH_S > $LAB/plan$N.jmx
  for ATTEMPT in 1 2; do
    sql -d bank -c CHECKPOINT
    snapshot $N before "$OUT/pg"
    HOST=$(python3 level.py $LAB/logs/stack.pids $LAB/logs/jmeter$N.out -- \
      nice -n "$NICE" java -cp "$CP:$LAB" -Djmeter.home=/usr/share/jmeter PermitXStream -n -t $LAB/plan$N.jmx \
      -l "$OUT/users$N.jtl" -j $LAB/logs/jmeter$N.log \
      -Jjmeter.save.saveservice.output_format=csv \
      -Jjmeter.save.saveservice.print_field_names=true \
      -Jjmeter.save.saveservice.thread_counts=true \
      -Jjmeter.save.saveservice.response_message=false \
      -Jjmeter.save.saveservice.thread_name=false \
      -Jjmeter.save.saveservice.data_type=false \
      -Jjmeter.save.saveservice.bytes=false \
      -Jjmeter.save.saveservice.latency=false \
      -Jjmeter.save.saveservice.url=false \
      -Jjmeter.save.saveservice.assertion_results_failure_message=false)
    snapshot $N after "$OUT/pg"
    # the level's time zero: JMeter's "Starting the test @ ... (epoch ms)"
    START_MS=$(sed -n 's/^Starting the test @ .*(\([0-9]*\)).*/\1/p' $LAB/logs/jmeter$N.out)
    OTHERS=${HOST##*,}
    echo "users $N, attempt $ATTEMPT: load before/after, CPU pressure %, host/stack/others busy %: $HOST"
    if [ "$ATTEMPT" = 1 ] && awk -v o="$OTHERS" -v t=$DISTURBED_PCT 'BEGIN { exit !(o > t) }'; then
      # disturbed: keep its files aside and run the level once more
      echo "$N,$LENGTH_S,$START_MS,$NODES,$ATTEMPT,0,$HOST" >> "$OUT/levels.csv"
      mkdir -p "$OUT/disturbed/pg"
      mv "$OUT/users$N.jtl" "$OUT/disturbed/"
      mv "$OUT"/pg/users$N.*.csv "$OUT/disturbed/pg/"
      sleep 3
      continue
    fi
    echo "$N,$LENGTH_S,$START_MS,$NODES,$ATTEMPT,1,$HOST" >> "$OUT/levels.csv"
    break
  done
  sleep 3
done
kill $SAR
SAR=
echo "load average at the end: $(cat /proc/loadavg)"
sadf -d $LAB/sa.bin -- -u > "$OUT/sar.sadf.csv"
sadf -d $LAB/sa.bin -- -q ALL > "$OUT/sar-q.sadf.csv"
sadf -d $LAB/sa.bin -- -d > "$OUT/sar-d.sadf.csv"
trap - EXIT
stop
sleep 3   # Tomcat writes its buffered access log as it stops
I=1
while [ $I -le "$NODES" ]; do
  gzip -c $LAB/node$I/logs/access.log > "$OUT/access-node$I.log.gz"
  I=$((I + 1))
done
gzip -c $LAB/pg/data/log/postgresql.csv > "$OUT/postgresql.csv.gz"
cp $LAB/logs/error.log "$OUT/apache-error.log"
