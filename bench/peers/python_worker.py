"""The Python peer: what a script would do to share a JSON file safely.

python_worker.py FILE COUNT none|file|file+dir

fcntl.flock(LOCK_EX) on FILE.lock, json.load, counter += 1, json.dump to a temp file beside
FILE, os.replace over FILE, unlock; with "file" the temp file is fsync'ed before the
rename, with "file+dir" the directory is fsync'ed after it too (ccsync's durable protocol).
Prints "ready", waits for a line on stdin, does COUNT increments, prints "done".
"""
import fcntl
import json
import os
import sys


def main():
    path, count, sync = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if sync not in ("none", "file", "file+dir"):
        sys.exit("usage: python_worker.py FILE COUNT none|file|file+dir")
    lock_path = path + ".lock"
    directory = os.path.dirname(os.path.abspath(path))
    temporary = "%s.tmp.%d" % (path, os.getpid())
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(count):
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
    print("done", flush=True)


main()
