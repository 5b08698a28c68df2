#!/bin/bash
# Screen (19th session, scratch build on d2c7ad4): SPINLAB_SCRATCH=1 lets a gated lock's
# newcomers over a crowd policy (pause-yield-park) spin without taking the one-spinner bit
# while the queue is empty; 0 is as committed. The default gates on 16 CPUs.
B=$PWD/.devbin; S=$B/scr3/spinlab; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-300}))
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/log.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.log 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
for n in 16 128; do for r in 0 1 1 0; do
  SPINLAB_SCRATCH=$r step h${n}_r${r}_$SECONDS 20 $S app --locks default --reps 3 --timeout 8s --quiet --json $R/h${n}_r${r}_$SECONDS.json -- $B/h$n
done; done
Q="--duration 200ms --min-reps 3 --max-reps 5 --quiet"
for cs in 0 100; do for r in 0 1; do
  SPINLAB_SCRATCH=$r step c${cs}_r$r 25 $S run contention --locks default,parking_lot,std --threads 2,16,128 --cs-ns $cs $Q --json $R/c${cs}_r$r.json
done; done
SPINLAB_SCRATCH=1 step t4_c0_r1 25 taskset -c 0-3 $S run contention --locks mcs:pause-yield-park,bounded:pause-yield-park,parking_lot --threads 2,4,16 --cs-ns 0 $Q --json $R/t4_c0_r1.json
SPINLAB_SCRATCH=1 step t4_h32_r1 25 taskset -c 0-3 $S app --locks mcs:pause-yield-park,bounded:pause-yield-park --reps 2 --timeout 8s --quiet --json $R/t4_h32_r1.json -- $B/h32
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt
for f in $R/h*.log $R/t4_h32*.log; do echo "== $f"; grep -E "baseline|default|mcs|bounded" $f | cut -c1-75; done
for f in $R/c*.log $R/t4_c0*.log; do echo "== $f"; grep -E "┆ +[0-9]+ ┆" $f | cut -c1-120; done
