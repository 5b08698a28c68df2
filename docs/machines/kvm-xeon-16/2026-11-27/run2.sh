#!/bin/bash
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
which perf strace > $R/tools.txt 2>&1; cat /etc/os-release >> $R/tools.txt
step() { local name=$1 cap=$2; shift 2; local s=$(date +%s)
  timeout -s INT $cap "$@" > $R/$name.log 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
for n in 128 64 16; do
  step h$n 45 $B/spinlab app --locks default,bounded:spin-park,mcs:pause-yield-park,mcs:spin-park,parking_lot --reps 2 --timeout 8s --quiet --json $R/h$n.json -- $B/h$n
done
step validate8x 150 $B/validate mutual_exclusion_oversubscribed_8x_cpus --nocapture
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt; grep -E "x128|panick|FAIL|result" $R/validate8x.log
