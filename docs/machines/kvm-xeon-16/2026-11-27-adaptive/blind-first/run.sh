#!/bin/bash
# Device run (19th session, the default's blind CAS kept, then try_lock, then the queue):
# the uncontended bench with the gated subjects, and hammer at 16/128 threads.
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-150}))
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/log.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
step uncontended 60 $B/uncontended --bench zzz
for o in default,mcs:pause-yield-park mcs:pause-yield-park,default; do for n in 16 128; do
  step h${n}_${o%%,*} 30 $B/spinlab app --locks $o --reps 3 --timeout 8s --quiet --json $R/h${n}_${o%%,*}.json -- $B/h$n
done; done
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt
grep -E "^(default|adaptive|bounded|gated-mcs|cas|std|parking|pthread|machine)|default /|noise" $R/uncontended.txt
for f in $R/h*.txt; do echo "== $f"; grep -E "baseline|default|mcs" $f | cut -c1-75; done
