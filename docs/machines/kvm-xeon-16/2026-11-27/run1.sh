#!/bin/bash
# Device run (18th session, HEAD 596432c): issue 10's rows at 4x/8x the CPUs, hammer at 8x,
# herd at 4..64 threads, default vs references, then the fair lock's tests.
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-520}))
{ nproc; lscpu; grep -m1 '^flags' /proc/cpuinfo; uname -a; cat /proc/loadavg; ldd --version | head -1; } > $R/machine.txt 2>&1
$B/spinlab info > $R/info.txt 2>&1; $B/spinlab info --json > $R/info.json 2>&1
step() { # name cap command...
  local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 10 ]; then echo "$name not run: $left s left" >> $R/log.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.log 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt
}
Q="--duration 200ms --min-reps 3 --max-reps 4 --quiet"
step oversub 120 $B/spinlab run contention --locks default,parking_lot,std,mcs:spin-park,mcs:futex,fair:spin-park,fair:futex,ticket:spin-park,ticket:futex,clh:spin-park,clh:futex,bounded:spin-park --threads 4x,8x --cs-ns 100 $Q --json $R/oversub.json
step hammer 110 $B/spinlab app --locks default,fair:spin-park,fair:futex,mcs:spin-park,mcs:futex,ticket:spin-park,clh:spin-park,bounded:spin-park,ttas:spin-park,tas:spin-park --reps 2 --timeout 10s --quiet --json $R/hammer.json -- $B/hammer128
step herd 150 $B/spinlab run herd --threads 4,8,16,32,64 --quiet --json $R/herd.json
step refs0 35 $B/spinlab run contention --locks default,parking_lot,std --threads 2,16 --cs-ns 0 --duration 200ms --min-reps 3 --max-reps 6 --quiet --json $R/refs0.json
step refs100 35 $B/spinlab run contention --locks default,parking_lot,std --threads 2,16 --cs-ns 100 --duration 200ms --min-reps 3 --max-reps 6 --quiet --json $R/refs100.json
step fair_slots 30 $B/fair_slots --test-threads 1
step validate 90 $B/validate -q
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/
cat $R/log.txt; tail -n 5 $R/fair_slots.log $R/validate.log
