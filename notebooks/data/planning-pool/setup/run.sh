#!/bin/sh
# The load test of notebooks/data/planning-pool: a private Apache (event MPM, mod_proxy_http) in
# front of a private Tomcat 10.1 with 8 request threads serving setup/Pool.java (35 ms of waiting,
# then 20 ms holding one of 3 permits of a fair semaphore), all on loopback, driven by JMeter 2.13
# at several load levels (threads = users, think time uniform 400-600 ms), with sar recording the
# host's CPU.  Run from this folder; writes ../users<N>.jtl, ../levels.csv (each level's start),
# ../tomcat-access.log and ../sar.sadf.csv.  Needs Debian's apache2, tomcat10, jmeter, sysstat
# and apache2-utils (ab), and a JDK (javac).
#
# LEVELS: "USERS:SECONDS ..." (a bare USERS runs DURATION_S seconds).  The light levels run
# longer so that each gives about 2000 samples, what a p99's standard error needs (the importer
# asks n >= 20/(1 - p)).
set -eu
LAB=/tmp/planning-pool-lab
LEVELS="${LEVELS:-5:240 10:120 20:60 40:60 60:60 80:60 90:60 100:60 120:60 160:60}"
DURATION_S="${DURATION_S:-60}"
OUTSIDE_MS=35 INSIDE_MS=20 PERMITS=3
# The host is shared with other work: the stack and JMeter run at this priority so that the
# other work delays them less (the test itself takes about a tenth of the host).
NICE="${NICE:--10}"
HERE=$(pwd)
OUT="$HERE/.."
rm -rf $LAB && mkdir -p $LAB/logs $LAB/tomcat/conf $LAB/tomcat/logs $LAB/tomcat/work \
  $LAB/tomcat/temp $LAB/tomcat/webapps/app/WEB-INF/classes
cp server.xml $LAB/tomcat/conf/
cp /usr/share/tomcat10/etc/web.xml /usr/share/tomcat10/etc/logging.properties \
  /usr/share/tomcat10/etc/catalina.properties $LAB/tomcat/conf/
cp web.xml $LAB/tomcat/webapps/app/WEB-INF/
javac -d $LAB/tomcat/webapps/app/WEB-INF/classes -cp /usr/share/java/tomcat10-servlet-api.jar Pool.java
CP=/usr/share/jmeter/bin/ApacheJMeter.jar:/usr/share/jmeter/lib/jorphan.jar:$(ls /usr/share/jmeter/lib/ext/*.jar | tr '\n' :)/usr/share/java/xstream.jar
javac -d $LAB -cp "$CP" PermitXStream.java

nice -n "$NICE" java -Dpool.outside.ms=$OUTSIDE_MS -Dpool.inside.ms=$INSIDE_MS -Dpool.permits=$PERMITS \
  -Dcatalina.home=/usr/share/tomcat10 -Dcatalina.base=$LAB/tomcat \
  -Djava.io.tmpdir=$LAB/tomcat/temp \
  -Djava.util.logging.config.file=$LAB/tomcat/conf/logging.properties \
  -Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager \
  -cp /usr/share/tomcat10/bin/bootstrap.jar:/usr/share/tomcat10/bin/tomcat-juli.jar \
  org.apache.catalina.startup.Bootstrap start > $LAB/logs/tomcat.out 2>&1 &
echo $! > $LAB/logs/tomcat.pid
SAR=
# stop what this script started, also when a step fails
stop() {
  [ -z "$SAR" ] || kill $SAR 2>/dev/null || true
  apache2 -f "$HERE/apache.conf" -k stop 2>/dev/null || true
  kill "$(cat $LAB/logs/tomcat.pid)" 2>/dev/null || true
}
trap stop EXIT
nice -n "$NICE" apache2 -f "$HERE/apache.conf" -k start
sleep 8
# warm the JIT (Tomcat's, Apache's first connections) so that the first level does not measure
# the compiler: 1200 requests, 8 at a time (about 10 s)
ab -q -n 1200 -c 8 http://127.0.0.1:8095/app/work > $LAB/logs/warmup.txt

echo "load average at the start: $(cat /proc/loadavg)"
sar -u 1 3600 -o $LAB/sa.bin > /dev/null 2>&1 &
SAR=$!
sleep 2
echo "users,duration_s,start_ms" > "$OUT/levels.csv"
for LEVEL in $LEVELS; do
  N=${LEVEL%%:*}
  LENGTH_S=$DURATION_S
  [ "$N" = "$LEVEL" ] || LENGTH_S=${LEVEL#*:}
  python3 make_plan.py $N $LENGTH_S > $LAB/plan$N.jmx
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
    -Jjmeter.save.saveservice.assertion_results_failure_message=false > $LAB/logs/jmeter$N.out
  # the level's time zero: JMeter's "Starting the test @ ... (epoch ms)"
  START_MS=$(sed -n 's/^Starting the test @ .*(\([0-9]*\)).*/\1/p' $LAB/logs/jmeter$N.out)
  echo "$N,$LENGTH_S,$START_MS" >> "$OUT/levels.csv"
  sleep 3
done
kill $SAR
SAR=
echo "load average at the end: $(cat /proc/loadavg)"
sadf -d $LAB/sa.bin -- -u > "$OUT/sar.sadf.csv"
trap - EXIT
stop
sleep 3   # Tomcat writes its buffered access log as it stops
cp $LAB/tomcat/logs/access.log "$OUT/tomcat-access.log"
