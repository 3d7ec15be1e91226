"""4. Save cost by document size, against the C floor."""
import os
import shutil

from .contention import Contender, Setup
from .documents import settings_document, write_document
from .processes import Pool, median

# (label, bytes, saves per trial, other files in the directory)
SIZES = [("1 KB", 1024, 100, 0), ("1 KB, 1000 other files in the directory", 1024, 100, 1000),
         ("100 KB", 100 * 1024, 40, 0), ("1 MB", 1024 * 1024, 8, 0), ("10 MB", 10 * 1024 * 1024, 2, 0)]


class SizedSetup(Setup):
    """A Setup on a document of a given size instead of the 1 KB one."""

    def __init__(self, bench, row, text, neighbours=0):
        self.row = row
        self.directory = bench.fresh_directory()
        self.path = os.path.join(self.directory, "settings.json")
        write_document(self.path, text)
        for index in range(neighbours):
            write_document(os.path.join(self.directory, "key-%d.json" % index), "{}\n")
        self.pool = Pool([row.argv(self.path)])
        self.expected = 0


def measure(bench):
    if not bench.have_floor:
        return ""
    options = bench.options
    tool, floor = bench.bench_tool(), bench.peer("floor")
    writers = [
        Contender("ccsync", "", "", "", lambda path: [tool, "bench-worker", path]),
        Contender("floor", "", "", "", lambda path: [floor, "increment", path, "--history"]),
        Contender("ccsync-relaxed", "", "", "", lambda path: [tool, "bench-worker", path, "--relaxed"]),
        Contender("floor-relaxed", "", "", "", lambda path: [floor, "increment", path, "--relaxed", "--history"]),
    ]
    raw = {(label, row.key): [] for label, _, _, _ in SIZES for row in writers}
    texts = {}
    for label, size, count, neighbours in SIZES:
        bench.log("save cost, %s: %d trials" % (label, options.trials))
        if size not in texts:
            texts[size] = settings_document(size)
        text = texts[size]
        setups = [SizedSetup(bench, row, text, neighbours) for row in writers]
        try:
            for trial in range(options.trials):
                for setup in setups:
                    result = setup.trial(count, 1)
                    if "rate" in result:
                        result["seconds"] /= count
                    raw[(label, setup.row.key)].append(result)
        finally:
            for setup in setups:
                setup.close()
    bench.results["sizes"] = {"%s/%s" % (key, label): runs for (label, key), runs in raw.items()}

    def cell(label, key):
        runs = raw[(label, key)]
        return None if any("error" in run for run in runs) else median([run["seconds"] for run in runs])

    def ratio(label, ours, theirs):
        pairs = list(zip(raw[(label, ours)], raw[(label, theirs)]))
        if any("error" in a or "error" in b for a, b in pairs):
            return None
        return median([a["seconds"] / b["seconds"] for a, b in pairs])

    def text(value, form="%.3f", scale=1000):
        return "FAILING" if value is None else form % (value * scale)

    lines = ["### 4. Save cost by document size", ""]
    lines.append(
        "One process, one locked read-modify-write of `counter` per save: ccsync's `SharedDocument.update` "
        "reads, parses, changes, prints and writes the document; the C floor reads it, edits the digits and "
        "writes it, with the same locking, temp file, fsyncs and rename. Milliseconds per save (median of %d "
        "trials; saves per trial: %s) and ccsync's time over the floor's, trial by trial."
        % (options.trials, ", ".join("%s %d" % (label, count) for label, _, count, neighbours in SIZES if not neighbours)))
    lines.append("")
    lines.append("| Size | ccsync durable | C floor durable | ccsync / floor | ccsync relaxed | C floor relaxed | ccsync / floor |")
    lines.append("|---|---|---|---|---|---|---|")
    for label, _, _, _ in SIZES:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            label, text(cell(label, "ccsync")), text(cell(label, "floor")), text(ratio(label, "ccsync", "floor"), "%.2f", 1),
            text(cell(label, "ccsync-relaxed")), text(cell(label, "floor-relaxed")),
            text(ratio(label, "ccsync-relaxed", "floor-relaxed"), "%.2f", 1)))
    lines.append("")
    return "\n".join(lines)
