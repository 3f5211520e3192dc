#!/bin/sh
# The whole test: run.sh at K = 1, 2, 3 nodes, one after the other (about 9 minutes each, up to
# 16 when other work on the host forces levels to be repeated).  Run from this folder; each
# run's own output (load average at its start and end, each level's host figures) goes to
# ../k<K>/run.log.
set -eu
for K in 1 2 3; do
  NODES=$K ./run.sh > /tmp/cluster-db-run$K.log 2>&1 || { cat /tmp/cluster-db-run$K.log >&2; exit 1; }
  cp /tmp/cluster-db-run$K.log ../k$K/run.log
done
