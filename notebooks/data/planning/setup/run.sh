#!/bin/sh
# The load test of notebooks/data/planning: a private Apache (event MPM, mod_proxy_http) in
# front of a private Tomcat 10.1 serving setup/Work.java, all on loopback, driven by JMeter 2.13
# at several load levels (threads = users, 40 s each), with sar recording the host's CPU.
# Run from this folder; writes ../users<N>.jtl and ../sar.sadf.csv.  Needs Debian's apache2,
# tomcat10, jmeter and sysstat, and a JDK (javac).
set -eu
LAB=/tmp/planning-lab
LEVELS="${LEVELS:-1 2 4 8 16 24 32}"
DURATION_S=40
HERE=$(pwd)
rm -rf $LAB && mkdir -p $LAB/logs $LAB/tomcat/conf $LAB/tomcat/logs $LAB/tomcat/work \
  $LAB/tomcat/temp $LAB/tomcat/webapps/app/WEB-INF/classes
cp server.xml $LAB/tomcat/conf/
cp /usr/share/tomcat10/etc/web.xml /usr/share/tomcat10/etc/logging.properties \
  /usr/share/tomcat10/etc/catalina.properties $LAB/tomcat/conf/
cp web.xml $LAB/tomcat/webapps/app/WEB-INF/
javac -d $LAB/tomcat/webapps/app/WEB-INF/classes -cp /usr/share/java/tomcat10-servlet-api.jar Work.java
CP=/usr/share/jmeter/bin/ApacheJMeter.jar:/usr/share/jmeter/lib/jorphan.jar:$(ls /usr/share/jmeter/lib/ext/*.jar | tr '\n' :)/usr/share/java/xstream.jar
javac -d $LAB -cp "$CP" PermitXStream.java

# Tomcat: 4000 SHA-256 rounds of 4 KiB per request (about 15-20 ms of one core)
java -Dwork.rounds=4000 -Dcatalina.home=/usr/share/tomcat10 -Dcatalina.base=$LAB/tomcat \
  -Djava.io.tmpdir=$LAB/tomcat/temp \
  -Djava.util.logging.config.file=$LAB/tomcat/conf/logging.properties \
  -Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager \
  -cp /usr/share/tomcat10/bin/bootstrap.jar:/usr/share/tomcat10/bin/tomcat-juli.jar \
  org.apache.catalina.startup.Bootstrap start > $LAB/logs/tomcat.out 2>&1 &
echo $! > $LAB/logs/tomcat.pid
apache2 -f "$HERE/apache.conf" -k start
sleep 8
# warm the JIT so that the first level does not measure the compiler
ab -q -n 400 -c 2 http://127.0.0.1:8089/app/work > /dev/null

sar -u 1 2000 -o $LAB/sa.bin > /dev/null 2>&1 &
SAR=$!
for N in $LEVELS; do
  python3 make_plan.py $N $DURATION_S > $LAB/plan$N.jmx
  java -cp "$CP:$LAB" -Djmeter.home=/usr/share/jmeter PermitXStream -n -t $LAB/plan$N.jmx \
    -l "$HERE/../users$N.jtl" -j $LAB/logs/jmeter$N.log \
    -Jjmeter.save.saveservice.output_format=csv \
    -Jjmeter.save.saveservice.print_field_names=true \
    -Jjmeter.save.saveservice.thread_counts=true \
    -Jjmeter.save.saveservice.response_message=false \
    -Jjmeter.save.saveservice.thread_name=false \
    -Jjmeter.save.saveservice.data_type=false \
    -Jjmeter.save.saveservice.bytes=false \
    -Jjmeter.save.saveservice.latency=false \
    -Jjmeter.save.saveservice.url=false \
    -Jjmeter.save.saveservice.assertion_results_failure_message=false
  sleep 2
done
kill $SAR
sadf -d $LAB/sa.bin -- -u > "$HERE/../sar.sadf.csv"
apache2 -f "$HERE/apache.conf" -k stop
kill "$(cat $LAB/logs/tomcat.pid)"
