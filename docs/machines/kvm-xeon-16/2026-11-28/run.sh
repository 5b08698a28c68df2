#!/bin/bash
# Device run (26th session). .devbin: HEAD c9d5c84 (the bounded word's release by subtraction,
# threads that move slots at a fair gate); .devbin/old: 8b6091d, the fourth lending's code.
# Alternated where the code changed: the uncontended bench, the fair gates at 4x and 8x the
# CPUs, the default against the references, hammer.c under the changed locks. Then the
# committed code alone: every lock x spin-park in hammer.c, herd at 4-64 threads, the tests.
B=$PWD/.devbin; O=$B/old; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-400}))
{ nproc; uname -a; cat /proc/loadavg; } > $R/machine.txt 2>&1
$B/spinlab info > $R/info.txt 2>&1
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/steps.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/steps.txt; }
for i in 1 2; do for b in old new; do X=$B; [ $b = old ] && X=$O
  step unc_${b}$i 20 $X/uncontended --bench zzz
done; done
F="default,mcs:spin-park,fair:spin-park,fair:futex,fair:spin-yield-park"
Q="--duration 200ms --min-reps 3 --max-reps 4 --quiet"
for i in 1 2; do for b in old new; do X=$B; [ $b = old ] && X=$O
  for cs in 0 100; do
    step f${cs}_${b}$i 25 $X/spinlab run contention --locks $F --threads 4x,8x --cs-ns $cs $Q --json $R/f${cs}_${b}$i.json
  done
done; done
for b in old new; do X=$B; [ $b = old ] && X=$O
  for cs in 0 100; do
    step c${cs}_$b 15 $X/spinlab run contention --locks default,parking_lot,std --threads 2,16 --cs-ns $cs --duration 200ms --min-reps 4 --max-reps 6 --quiet --json $R/c${cs}_$b.json
  done
  step h16_$b 30 $X/spinlab app --locks default,bounded:spin-park,fair:spin-park --reps 2 --timeout 8s --quiet --json $R/h16_$b.json -- $B/h16
done
H="default,tas:spin-park,ttas:spin-park,bounded:spin-park,adaptive:spin-park,mcs:spin-park,clh:spin-park,ticket:spin-park,fair:spin-park"
step h128 60 $B/spinlab app --locks $H --reps 2 --timeout 8s --quiet --json $R/h128.json -- $B/h128
step herd 35 $B/spinlab run herd --threads 4,8,16,32,64 --quiet --json $R/herd.json
step unit 15 $B/unit
step fair_slots 15 $B/fair_slots
step validate8x 60 $B/validate mutual_exclusion_oversubscribed_8x_cpus --nocapture
tar czf $OUT/r.tgz -C /tmp r; cp $R/steps.txt $OUT/; cat $R/steps.txt
grep -E "^(default|adaptive|bounded|gated|mcs|clh|cas|std|parking|pthread|machine)|PASS|MISS" $R/unc_*.txt | cut -c1-110
for f in $R/h*.txt; do echo "== $f"; grep -E "baseline|default|spin-park|warning" $f | awk -F'┆' '{print $1,$2,$3,$4,$5,$6}' | tr -s ' ' | cut -c1-90; done
grep -E "test result|panick|FAILED" $R/validate8x.txt $R/unit.txt $R/fair_slots.txt
