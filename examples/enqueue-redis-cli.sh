#!/bin/sh
# enqueue-redis-cli.sh — enqueue a Drover task from any shell with redis-cli,
# using the documented enqueue script (docs/redis-schema.md, "Enqueueing").
#
#   examples/enqueue-redis-cli.sh QUEUE TASK [ARGS_JSON] [ID]
#
# Environment: REDIS_HOST (127.0.0.1), REDIS_PORT (6379), DROVER_PREFIX
# (drover), DROVER_SCHEMA (the path of docs/redis-schema.md; the Lua script
# is taken from it, so it is always the documented one).
#
# Prints the message's position (> 0), or -1 when the id was already known
# (an idempotent no-op).
#
# The envelope is JSON: every string spliced into it is escaped (json_str),
# and ARGS_JSON is checked with jq when jq is installed.
set -eu

die() { echo "$0: $*" >&2; exit 2; }

# json_str prints $1 as the inside of a JSON string: \ and " escaped.
# Control characters (newlines, tabs, …) are refused rather than escaped.
json_str() {
	case $1 in
	*[[:cntrl:]]*) die "control characters are not allowed in a name or id: $(printf '%s' "$1" | od -c | head -1)" ;;
	esac
	printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'
}

queue=${1:?usage: $0 QUEUE TASK [ARGS_JSON] [ID]}
task=${2:?usage: $0 QUEUE TASK [ARGS_JSON] [ID]}
args=${3:-null}
here=$(cd "$(dirname "$0")" && pwd)
schema=${DROVER_SCHEMA:-$here/../docs/redis-schema.md}
prefix=${DROVER_PREFIX:-drover}
cli="redis-cli -h ${REDIS_HOST:-127.0.0.1} -p ${REDIS_PORT:-6379}"

# A caller-chosen id is an idempotency key (keyed=1); otherwise make one up
# that is unique enough for a shell script (the Go client uses ULIDs).
if [ $# -ge 4 ]; then
	id=$4
	keyed=1
else
	id="sh-$(date +%s%N)-$$"
	keyed=0
fi
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
if command -v jq >/dev/null 2>&1; then
	printf '%s' "$args" | jq . >/dev/null 2>&1 || die "ARGS_JSON is not valid JSON: $args"
fi
# Plain assignments: with set -e a refused string stops the script here.
jid=$(json_str "$id")
jqueue=$(json_str "$queue")
jtask=$(json_str "$task")
envelope=$(printf '{"id":"%s","queue":"%s","task":"%s","args":%s,"attempt":0,"enqueued_at":"%s"}' \
	"$jid" "$jqueue" "$jtask" "$args" "$now")

# Extract the script between its first line and the end of the code block.
script=$(mktemp)
trap 'rm -f "$script"' EXIT
awk '/^-- drover enqueue v3/{on=1} on&&/^```/{exit} on{print}' "$schema" >"$script"
[ -s "$script" ] || { echo "no enqueue script found in $schema" >&2; exit 1; }

k="$prefix:{$queue}"
$cli --eval "$script" "$k:log" "$k:msg" "$k:seq" "$k:delayed" "$k:seen" "$k:owner" , \
	86400000 "$prefix:wakeup-unowned" "$queue" "$id" "$envelope" 0 "$keyed"
$cli SADD "$prefix:queues" "$queue" >/dev/null
echo "enqueued $id" >&2
