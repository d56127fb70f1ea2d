#!/bin/sh
# hello.sh — an example Drover task in shell.
#
# The worker runs it as a subprocess (argv from the queue's task route, never
# through a shell) with the message envelope as JSON on stdin and
# DROVER_QUEUE, DROVER_TASK, DROVER_MESSAGE_ID, DROVER_ATTEMPT,
# DROVER_POSITION and DROVER_DEADLINE in the environment.
#
# Exit 0 is success, 75 (EX_TEMPFAIL) asks for a retry, anything else is a
# failure (retried with backoff, then dead-lettered with stderr's tail).
set -eu
envelope=$(cat)
echo "hello from ${DROVER_QUEUE}/${DROVER_TASK} id=${DROVER_MESSAGE_ID} attempt=${DROVER_ATTEMPT}: ${envelope}"
case "$envelope" in
*'"fail":true'*)
	echo "asked to fail (args.fail is true)" >&2
	exit 1
	;;
esac
