#!/bin/sh
# The loopback test of experiments/loopback: a private Apache httpd 2.4 (worker MPM, Debian's
# mpm_worker.conf values, keep-alive off) in front of a private Tomcat 10.1 serving
# setup/Sleep.java, all on 127.0.0.1, driven by setup/oneshot.py (100 one-shot clients sent at
# once).  Run from this folder; writes ../results/<cell>/ (clients.csv, children.csv,
# error.log, Tomcat's access.log, mod_jk.log) and ../results/cells.csv.  Needs Debian's
# apache2, libapache2-mod-jk, tomcat10 and a JDK (javac).
#
# Cells:
#   jk-5000, jk-500: mod_jk -> the AJP connector with maxConnections=30; the servlet sleeps
#       5000 / 500 ms; the clients give up after 120 s and close at once after EOF.
#   spawn-1 .. spawn-4: mod_proxy_http -> the HTTP connector; the servlet sleeps 100 ms; the
#       clients hold their sockets 5 s after EOF (so each response's lingering close holds its
#       worker SECONDS_TO_LINGER = 2 s) and give up after 30 s.  Each starts the clients a
#       different time after httpd's start (STARTS), so the parent's once-a-second maintenance
#       falls at a different phase of the load.
set -eu
LAB=/tmp/loopback-lab
HERE=$(pwd)
OUT="$HERE/../results"
NICE="${NICE:--10}"
STARTS="${STARTS:-3.0 3.25 3.5 3.75}"
JK_SLEEPS="${JK_SLEEPS:-5000 500}"
rm -rf $LAB && mkdir -p $LAB/logs $LAB/tomcat/conf $LAB/tomcat/logs $LAB/tomcat/work \
  $LAB/tomcat/temp $LAB/tomcat/webapps/app/WEB-INF/classes "$OUT"
cp server.xml $LAB/tomcat/conf/
cp /usr/share/tomcat10/etc/web.xml /usr/share/tomcat10/etc/logging.properties \
  /usr/share/tomcat10/etc/catalina.properties $LAB/tomcat/conf/
cp web.xml $LAB/tomcat/webapps/app/WEB-INF/
cp apache-common.conf apache-jk.conf apache-proxy.conf workers.properties $LAB/
javac -d $LAB/tomcat/webapps/app/WEB-INF/classes -cp /usr/share/java/tomcat10-servlet-api.jar Sleep.java

start_tomcat() {
  rm -f $LAB/tomcat/logs/access.log
  nice -n "$NICE" java -Dcatalina.home=/usr/share/tomcat10 -Dcatalina.base=$LAB/tomcat \
    -Djava.io.tmpdir=$LAB/tomcat/temp \
    -Djava.util.logging.config.file=$LAB/tomcat/conf/logging.properties \
    -Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager \
    -cp /usr/share/tomcat10/bin/bootstrap.jar:/usr/share/tomcat10/bin/tomcat-juli.jar \
    org.apache.catalina.startup.Bootstrap start > $LAB/logs/tomcat.out 2>&1 &
  echo $! > $LAB/logs/tomcat.pid
  for _ in $(seq 60); do
    curl -s -o /dev/null "http://127.0.0.1:8096/app/sleep?ms=0" && break
    sleep 0.5
  done
  # warm the JIT through the HTTP connector only (the AJP connector keeps no connection)
  ab -q -n 2000 -c 10 "http://127.0.0.1:8096/app/sleep?ms=0" > $LAB/logs/warmup.txt
}
stop_tomcat() {
  kill "$(cat $LAB/logs/tomcat.pid)" 2>/dev/null || true
  sleep 2
}
CONF=
stop_all() {
  [ -z "$CONF" ] || apache2 -f "$LAB/$CONF" -k stop 2>/dev/null || true
  stop_tomcat
}
trap stop_all EXIT

# one cell: CELL CONF PATH DEADLINE HOLD WAIT_AFTER_START
cell() {
  NAME=$1 CONF=$2
  rm -f $LAB/logs/error.log $LAB/logs/mod_jk.log
  nice -n "$NICE" apache2 -f "$LAB/$CONF" -k start
  sleep "$6"
  mkdir -p "$OUT/$NAME"
  nice -n "$NICE" python3 oneshot.py --path "$3" --clients 100 --deadline "$4" --hold "$5" \
    --out "$OUT/$NAME/clients.csv" --httpd-pid-file $LAB/logs/httpd.pid \
    --children "$OUT/$NAME/children.csv" > $LAB/logs/oneshot.out
  cat $LAB/logs/oneshot.out
  START=$(sed -n 's/^start_epoch_s=//p' $LAB/logs/oneshot.out)
  RESULT=$(sed -n 's/^served=\([0-9]*\) gave_up=\([0-9]*\) last_eof_s=\(.*\)/\1,\2,\3/p' $LAB/logs/oneshot.out)
  apache2 -f "$LAB/$CONF" -k stop
  CONF=
  sleep 2
  cp $LAB/logs/error.log "$OUT/$NAME/"
  [ ! -f $LAB/logs/mod_jk.log ] || cp $LAB/logs/mod_jk.log "$OUT/$NAME/"
  # the parent's main loop starts as it logs "resuming normal operations" (worker_run)
  # (%{cu}t: local time, "YYYY-MM-DD hh:mm:ss.uuuuuu"; the host runs on UTC)
  RESUMED=$(sed -n 's/^\[\([^]]*\)\].*resuming normal operations.*/\1/p' "$OUT/$NAME/error.log" | head -1)
  echo "$NAME,$START,$(echo "$RESUMED" | tr ' ' T),$RESULT" >> "$OUT/cells.csv"
}

echo "cell,clients_start_epoch_s,httpd_resumed,served,gave_up,last_eof_s" > "$OUT/cells.csv"
echo "load average at the start: $(cat /proc/loadavg)"
for MS in $JK_SLEEPS; do
  start_tomcat
  cell "jk-$MS" apache-jk.conf "/app/sleep?ms=$MS" 120 0 3.5
  cp $LAB/tomcat/logs/access.log "$OUT/jk-$MS/tomcat-access.log"
  stop_tomcat
done
start_tomcat
K=0
for WAIT in $STARTS; do
  K=$((K + 1))
  cell "spawn-$K" apache-proxy.conf "/app/sleep?ms=100" 30 5 "$WAIT"
done
cp $LAB/tomcat/logs/access.log "$OUT/spawn-tomcat-access.log"
echo "load average at the end: $(cat /proc/loadavg)"
