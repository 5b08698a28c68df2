#!/bin/bash
# Device run 2 (24th session): a ticket gate's waiters spin on their waiting-array slot instead
# of `serving` (the new build, .devbin/new) against f0b540e (.devbin), alternated: hammer at 16
# and 128 threads, contention at 1x, 4x and 8x the CPUs; then validate at 8x with the new build.
B=$PWD/.devbin; R=/tmp/r; mkdir -p $R
step() { local name=$1 cap=$2; shift 2; local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/steps.txt; }
for r in 1 2; do for b in old new; do
  X=$B; [ $b = new ] && X=$B/new
  step h16_${b}_$r 40 $X/spinlab app --locks ticket:spin-park,ticket:futex,mcs:spin-park --reps 2 --timeout 8s --quiet --json $R/h16_${b}_$r.json -- $B/h16
  step h128_${b}_$r 40 $X/spinlab app --locks ticket:spin-park,ticket:futex --reps 2 --timeout 8s --quiet --json $R/h128_${b}_$r.json -- $B/h128
  step o0_${b}_$r 30 $X/spinlab run contention --locks default,ticket:spin-park,ticket:futex,mcs:spin-park --threads 1x,4x,8x --cs-ns 0 --duration 200ms --min-reps 3 --max-reps 4 --quiet --json $R/o0_${b}_$r.json
done; done
step validate8x_new 70 $B/new/validate mutual_exclusion_oversubscribed_8x_cpus --nocapture
tar czf $OUT/r2.tgz -C /tmp r; cp $R/steps.txt $OUT/; cat $R/steps.txt
for f in $R/h*.txt; do echo "== $f"; grep -E "baseline|spin-park|futex" $f | cut -c1-80; done
for f in $R/o0*.txt; do echo "== $f"; grep -E "┆ +[0-9]+ ┆" $f | awk -F'┆' '{print $1,$2,$4,$7,$9}' | tr -s ' ' | cut -c1-100; done
grep -E "test result|panick|FAILED" $R/validate8x_new.txt; grep -E "ticket" $R/validate8x_new.txt | sort -t: -k2 -g | tail -4
