#!/bin/bash
# Device run (19th session, HEAD d3cc7ba): the adaptive default itself on 16 CPUs, the fair lock
# after 643b3b7, herd with the new default, and the crowd threshold under taskset (4 and 8 CPUs).
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-470}))
{ nproc; uname -a; cat /proc/loadavg; } > $R/machine.txt 2>&1
$B/spinlab info > $R/info.txt 2>&1
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/log.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.log 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
D="default,bounded:pause-yield-park,mcs:pause-yield-park,parking_lot"
step h16 45 $B/spinlab app --locks $D --reps 2 --timeout 8s --quiet --json $R/h16.json -- $B/h16
step h128 45 $B/spinlab app --locks $D --reps 2 --timeout 8s --quiet --json $R/h128.json -- $B/h128
step h128fair 50 $B/spinlab app --locks fair:spin-park,fair:pause-yield-park,fair:futex,ticket:spin-park --reps 2 --timeout 8s --quiet --json $R/h128fair.json -- $B/h128
Q="--duration 200ms --min-reps 3 --max-reps 4 --quiet"
C="default,parking_lot,std,mcs:pause-yield-park,bounded:pause-yield-park"
step c0 45 $B/spinlab run contention --locks $C --threads 2,16,128 --cs-ns 0 $Q --json $R/c0.json
step c100 45 $B/spinlab run contention --locks $C --threads 2,16,128 --cs-ns 100 $Q --json $R/c100.json
step herd 60 $B/spinlab run herd --threads 4,8,16,32,64 --quiet --json $R/herd.json
for k in 4 8; do
  T="taskset -c 0-$((k-1))"
  step t${k}_h32 35 $T $B/spinlab app --locks default,bounded:pause-yield-park,mcs:pause-yield-park --reps 2 --timeout 8s --quiet --json $R/t${k}_h32.json -- $B/h32
  step t${k}_c0 35 $T $B/spinlab run contention --locks default,parking_lot,bounded:pause-yield-park,mcs:pause-yield-park --threads 2,1x,4x --cs-ns 0 $Q --json $R/t${k}_c0.json
done
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt
for f in $R/h*.log $R/t*h32.log; do echo "== $f"; grep -E "baseline|default|mcs|bounded|fair|ticket|parking|warning" $f | cut -c1-110; done
