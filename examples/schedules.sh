#!/bin/sh
# schedules.sh — manage schedules with drover ctl. Run it against a fleet,
# e.g. one started with `drover dev` (export the DROVER_CONFIG it prints).
set -eu
drover=${DROVER:-drover}

# Every 30 seconds, aligned to the clock (:00, :30).
$drover ctl schedule add heartbeat-30s --queue hello --task heartbeat --every 30s --args '{"from":"schedules.sh"}' --replace

# Every 5 minutes, measured from the last run.
$drover ctl schedule add sync --queue python --task sync --every 5m --relative --replace

# 04:05 on weekdays in Berlin; missed runs (downtime) are skipped.
$drover ctl schedule add nightly-report --queue hello --task report \
	--cron "5 4 * * mon-fri" --tz Europe/Berlin --catchup skip --replace

# Once, in ten minutes (a one-shot).
$drover ctl schedule add launch --queue checksums --task example.checksum \
	--at "$(date -u -d '+10 min' +%Y-%m-%dT%H:%M:%SZ)" --args '{"text":"launch"}' --replace

$drover ctl schedule ls
$drover ctl schedule disable sync
$drover ctl schedule show sync
$drover ctl schedule enable sync
$drover ctl schedule rm launch
