#!/bin/bash
# Device run 3 (24th session, HEAD 8b6091d as .devbin/new; f0b540e as .devbin): every lock x
# spin-park in hammer.c at 16 and 128 threads, the gated locks at 4x and 8x the CPUs, and the
# ticket gate's yielding policies before and after its waiters moved to their slots.
B=$PWD/.devbin; N=$B/new; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-300}))
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/steps.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/steps.txt; }
H="default,tas:spin-park,ttas:spin-park,bounded:spin-park,adaptive:spin-park,mcs:spin-park,clh:spin-park,ticket:spin-park,fair:spin-park"
step h128 70 $N/spinlab app --locks $H --reps 2 --timeout 8s --quiet --json $R/h128.json -- $B/h128
step h16 90 $N/spinlab app --locks $H --reps 2 --timeout 8s --quiet --json $R/h16.json -- $B/h16
for b in old new; do X=$B; [ $b = new ] && X=$N
  step h16y_$b 30 $X/spinlab app --locks ticket:spin-yield-park,ticket:pause-yield-park --reps 2 --timeout 8s --quiet --json $R/h16y_$b.json -- $B/h16
done
G="default,mcs:spin-park,clh:spin-park,ticket:spin-park,fair:spin-park,mcs:futex,clh:futex,ticket:futex,fair:futex"
for cs in 0 100; do
  step o$cs 35 $N/spinlab run contention --locks $G --threads 4x,8x --cs-ns $cs --duration 200ms --min-reps 3 --max-reps 4 --quiet --json $R/o$cs.json
done
tar czf $OUT/r3.tgz -C /tmp r; cp $R/steps.txt $OUT/; cat $R/steps.txt
for f in $R/h*.txt; do echo "== $f"; grep -E "baseline|default|spin-park|yield-park|warning" $f | awk -F'┆' '{print $1,$2,$3,$4,$5,$6}' | tr -s ' ' | cut -c1-90; done
for f in $R/o*.txt; do echo "== $f"; grep -E "┆ +[0-9]+ ┆" $f | awk -F'┆' '{print $1,$2,$4,$7,$9}' | tr -s ' ' | cut -c1-90; done
