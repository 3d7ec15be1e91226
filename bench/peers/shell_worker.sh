#!/bin/sh
# The shell peer: flock(1) on FILE.lock around jq and mv, as a script would share a file.
# shell_worker.sh FILE: prints "ready"; for each line N on stdin does N increments and prints
# "done"; exits when its input ends. No fsync: mv is a rename, nothing more.
file=$1
temporary="$file.tmp.$$"
echo ready
while read -r count; do
  i=0
  while [ "$i" -lt "$count" ]; do
    flock "$file.lock" sh -c 'jq ".counter += 1" "$1" > "$2" && mv "$2" "$1"' sh "$file" "$temporary" || exit 1
    i=$((i + 1))
  done
  echo done
done
