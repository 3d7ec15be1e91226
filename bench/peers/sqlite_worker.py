"""The SQLite peer: the same counter in a database row, through Python's sqlite3 module.

sqlite_worker.py DATABASE wal|delete full|normal

Each increment is BEGIN IMMEDIATE; UPDATE settings SET counter = counter + 1; COMMIT, in the
given journal mode and synchronous level (the row also holds the 1 KB settings document as
text, so a commit writes a page of comparable size). A 60 s busy timeout makes contenders
wait for the write lock as SQLite does (its busy handler sleeps and retries).
Prints "ready"; for each line N on stdin does N increments and prints "done"; exits when its
input ends.
"""
import sqlite3
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: sqlite_worker.py DATABASE wal|delete full|normal")
    database, journal, synchronous = sys.argv[1], sys.argv[2], sys.argv[3]
    connection = sqlite3.connect(database, isolation_level=None, timeout=60)
    mode = connection.execute("PRAGMA journal_mode=%s" % journal).fetchone()[0]
    if mode.lower() != journal:
        sys.exit("journal mode %s not available (got %s)" % (journal, mode))
    connection.execute("PRAGMA synchronous=%s" % synchronous)
    print("ready", flush=True)
    for line in sys.stdin:
        for _ in range(int(line)):
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("UPDATE settings SET counter = counter + 1 WHERE id = 1")
            connection.execute("COMMIT")
        print("done", flush=True)
    connection.close()


main()
