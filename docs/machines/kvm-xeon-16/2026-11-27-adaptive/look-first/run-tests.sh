#!/bin/bash
# Device run (19th session, d2c7ad4): the uncontended bench's interleaved table, validate's
# oversubscribed test (8x the CPUs) and the fair lock's slot tests, on 16 CPUs.
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-230}))
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/log.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
step uncontended 70 $B/uncontended --bench zzz
step validate8x 110 $B/validate mutual_exclusion_oversubscribed_8x_cpus --nocapture
step fair_slots 40 $B/fair_slots --test-threads 1
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt
grep -E "^(default|adaptive|bounded|cas|std|parking|pthread|machine)|PASS|MISS" $R/uncontended.txt
grep -E "test result|panick|FAILED" $R/validate8x.txt $R/fair_slots.txt; grep -E "x128" $R/validate8x.txt | sort -t: -k2 -g | tail -5
