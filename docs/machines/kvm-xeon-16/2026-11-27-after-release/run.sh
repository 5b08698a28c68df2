#!/bin/bash
# Device run (24th session, HEAD f0b540e): every gate's wake-up after the word's release, on 16
# CPUs. Issue 10's targets: the gated locks at 4x and 8x the CPUs, the default against the
# references, a pthread program at 8x the CPUs under every lock x spin-park, herd at 4-64
# threads, the uncontended bench; then the library's tests at 8x the CPUs.
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-430}))
{ nproc; uname -a; cat /proc/loadavg; } > $R/machine.txt 2>&1
$B/spinlab info > $R/info.txt 2>&1
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/steps.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/steps.txt; }
G="default,mcs:spin-park,clh:spin-park,ticket:spin-park,fair:spin-park,mcs:futex,clh:futex,ticket:futex,fair:futex"
Q="--duration 200ms --min-reps 3 --max-reps 4 --quiet"
for cs in 0 100; do
  step o$cs 50 $B/spinlab run contention --locks $G --threads 4x,8x --cs-ns $cs $Q --json $R/o$cs.json
done
for cs in 0 100; do
  step c$cs 35 $B/spinlab run contention --locks default,parking_lot,std --threads 2,16 --cs-ns $cs --duration 200ms --min-reps 4 --max-reps 6 --quiet --json $R/c$cs.json
done
H="default,tas:spin-park,ttas:spin-park,bounded:spin-park,adaptive:spin-park,mcs:spin-park,clh:spin-park,ticket:spin-park,fair:spin-park"
step h128 100 $B/spinlab app --locks $H --reps 2 --timeout 8s --quiet --json $R/h128.json -- $B/h128
step herd 45 $B/spinlab run herd --threads 4,8,16,32,64 --quiet --json $R/herd.json
step uncontended 60 $B/uncontended --bench zzz
step validate8x 60 $B/validate mutual_exclusion_oversubscribed_8x_cpus --nocapture
step unit 40 $B/unit
step h16 50 $B/spinlab app --locks default,mcs:spin-park,clh:spin-park,ticket:spin-park,fair:spin-park --reps 2 --timeout 8s --quiet --json $R/h16.json -- $B/h16
tar czf $OUT/r.tgz -C /tmp r; cp $R/steps.txt $OUT/; cat $R/steps.txt
for f in $R/o*.txt $R/c*.txt; do echo "== $f"; grep -E "┆ +[0-9]+ ┆" $f | awk -F'┆' '{print $1,$2,$4,$6,$7,$9}' | tr -s ' ' | cut -c1-110; done
for f in $R/h*.txt; do echo "== $f"; grep -E "baseline|default|spin-park|warning" $f | cut -c1-100; done
grep -E "^(default|adaptive|bounded|gated|mcs|clh|cas|std|parking|pthread|machine)|PASS|MISS" $R/uncontended.txt | cut -c1-110
grep -E "test result|panick|FAILED" $R/validate8x.txt $R/unit.txt
grep -E "default|ttas:spin " $R/herd.txt | head -12 | cut -c1-120
