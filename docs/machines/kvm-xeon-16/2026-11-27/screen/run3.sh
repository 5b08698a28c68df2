#!/bin/bash
# Screen: the default's crowd rule (SPINLAB_SCRATCH=0 as committed, 1 = crowd only while no
# sleeper is counted), beside the gated MCS lock, on 16 CPUs.
B=$PWD/.devbin; S=$B/scr/spinlab; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-300}))
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run" >> $R/log.txt; return; fi
  local s=$(date +%s); timeout -s INT $cap "$@" > $R/$name.log 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
for n in 16 128; do
  SPINLAB_SCRATCH=0 step h${n}_r0 45 $S app --locks default,mcs:pause-yield-park --reps 2 --timeout 8s --quiet --json $R/h${n}_r0.json -- $B/h$n
  SPINLAB_SCRATCH=1 step h${n}_r1 30 $S app --locks default --reps 2 --timeout 8s --quiet --json $R/h${n}_r1.json -- $B/h$n
done
for cs in 0 100; do for r in 0 1; do
  SPINLAB_SCRATCH=$r step c${cs}_r$r 30 $S run contention --locks default,parking_lot,std,mcs:pause-yield-park --threads 2,16,128 --cs-ns $cs --duration 200ms --min-reps 3 --max-reps 4 --quiet --json $R/c${cs}_r$r.json
done; done
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt
for f in $R/h*.log; do echo "== $f"; grep -E "baseline|default|mcs|warning" $f | cut -c1-100; done
