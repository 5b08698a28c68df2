#!/bin/bash
# Device run (19th session, c0b3a04, the committed default): contention against the
# references at 2, 16 and 128 threads, empty and 100 ns sections.
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
step() { local name=$1 cap=$2; shift 2; local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
Q="--duration 200ms --min-reps 4 --max-reps 6 --quiet"
for cs in 0 100; do
  step c$cs 40 $B/spinlab run contention --locks default,parking_lot,std,bounded:pause-yield-park --threads 2,16,128 --cs-ns $cs $Q --json $R/c$cs.json
done
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt
for f in $R/c*.txt; do echo "== $f"; grep -E "┆ +[0-9]+ ┆" $f | cut -c1-140; done
