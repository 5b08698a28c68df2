#!/bin/bash
# Device run 2 (19th session): the default with a look before its CAS behind the gate (vs
# mcs:pause-yield-park, the same gated lock), the default at 2 and 16 threads with more reps,
# CPython's test_queue under every lock x spin-park, and ticket:spin-park's spread at 128.
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
START=$(date +%s); DEADLINE=$((START + ${BUDGET:-420}))
step() { local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - $(date +%s))); [ $left -lt $cap ] && cap=$left
  if [ $cap -lt 8 ]; then echo "$name not run: $left s left" >> $R/log.txt; return; fi
  local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.log 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/log.txt; }
step h16 40 $B/spinlab app --locks default,mcs:pause-yield-park --reps 3 --timeout 8s --quiet --json $R/h16.json -- $B/h16
step h128 40 $B/spinlab app --locks default,mcs:pause-yield-park,ticket:spin-park --reps 3 --timeout 8s --quiet --json $R/h128.json -- $B/h128
Q="--duration 200ms --min-reps 4 --max-reps 6 --quiet"
step c0 45 $B/spinlab run contention --locks default,parking_lot,std,mcs:pause-yield-park,bounded:pause-yield-park --threads 2,16 --cs-ns 0 $Q --json $R/c0.json
step c100 45 $B/spinlab run contention --locks default,parking_lot,std,mcs:pause-yield-park,bounded:pause-yield-park --threads 2,16 --cs-ns 100 $Q --json $R/c100.json
{ python3 --version; python3 -c "import test.test_queue; print('test_queue importable')"; } > $R/python.txt 2>&1
if grep -q importable $R/python.txt; then
  step queue 230 $B/spinlab app --locks default,mcs:spin-park,ticket:spin-park,clh:spin-park,fair:spin-park,bounded:spin-park,ttas:spin-park,tas:spin-park --reps 2 --timeout 40s --quiet --json $R/queue.json -- python3 -m test test_queue
fi
tar czf $OUT/r.tgz -C /tmp r; cp $R/log.txt $OUT/; cat $R/log.txt $R/python.txt
for f in $R/*.log; do echo "== $f"; grep -E "┆" $f | cut -c1-120; done
