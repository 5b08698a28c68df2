#!/bin/bash
# Device run 4 (24th session, .devbin/new = 8b6091d): the word alone against the gated default
# in herd up to one thread per CPU, and the gates over the yielding policies in hammer.c.
B=$PWD/.devbin; N=$B/new; R=/tmp/r; mkdir -p $R
step() { local name=$1 cap=$2; shift 2; local s=$(date +%s) l0=$(cut -d' ' -f1-3 /proc/loadavg)
  timeout -s INT $cap "$@" > $R/$name.txt 2>&1
  echo "$name rc=$? $(( $(date +%s) - s )) s load before $l0 after $(cut -d' ' -f1-3 /proc/loadavg)" >> $R/steps.txt; }
step herd2 30 $N/spinlab run herd --locks default,bounded:pause-yield-park,mcs:pause-yield-park,ttas:spin --threads 4,8,16 --quiet --json $R/herd2.json
step h16y2 40 $N/spinlab app --locks ticket:spin-yield-park,ticket:pause-yield-park,mcs:pause-yield-park,clh:pause-yield-park,fair:pause-yield-park --reps 2 --timeout 8s --quiet --json $R/h16y2.json -- $B/h16
tar czf $OUT/r4.tgz -C /tmp r; cat $R/steps.txt
grep -E "┆ +[0-9]+ ┆" $R/herd2.txt | awk -F'┆' '{print $1,$2,$3,$4}' | tr -s ' '
grep -E "baseline|park" $R/h16y2.txt | awk -F'┆' '{print $1,$2,$3,$4,$5}' | tr -s ' '
