"""The Python peer: what a script would do to share a JSON file safely.

python_worker.py FILE none|file|file+dir

Each increment: fcntl.flock(LOCK_EX) on FILE.lock, json.load, counter += 1, json.dump to a
temp file beside FILE, os.replace over FILE, unlock. With "file" the temp file is fsync'ed
before the rename; with "file+dir" the directory is fsync'ed after it too (ccsync's durable
protocol). Prints "ready"; for each line N on stdin does N increments and prints "done";
exits when its input ends.
"""
import fcntl
import json
import os
import sys


def increment(path, lock_path, directory, temporary, sync):
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(path) as file:
            document = json.load(file)
        document["counter"] += 1
        with open(temporary, "w") as file:
            json.dump(document, file, indent=2)
            file.write("\n")
            if sync != "none":
                file.flush()
                os.fsync(file.fileno())
        os.replace(temporary, path)
        if sync == "file+dir":
            descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(descriptor)
            os.close(descriptor)
    # Closing the lock file released the lock.


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("none", "file", "file+dir"):
        sys.exit("usage: python_worker.py FILE none|file|file+dir")
    path, sync = sys.argv[1], sys.argv[2]
    lock_path = path + ".lock"
    directory = os.path.dirname(os.path.abspath(path))
    temporary = "%s.tmp.%d" % (path, os.getpid())
    print("ready", flush=True)
    for line in sys.stdin:
        for _ in range(int(line)):
            increment(path, lock_path, directory, temporary, sync)
        print("done", flush=True)


main()
