#!/bin/sh
# The shell peer: flock(1) on FILE.lock around jq and mv, as a script would share a file.
# shell_worker.sh FILE COUNT: prints "ready", waits for a line on stdin, does COUNT
# increments, prints "done". No fsync: mv is a rename, nothing more.
file=$1
count=$2
temporary="$file.tmp.$$"
echo ready
read -r _
i=0
while [ "$i" -lt "$count" ]; do
  flock "$file.lock" sh -c 'jq ".counter += 1" "$1" > "$2" && mv "$2" "$1"' sh "$file" "$temporary" || exit 1
  i=$((i + 1))
done
echo done
