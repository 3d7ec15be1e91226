"""3. The command line: one `ccsync get` or `ccsync set` against jq and flock+jq+mv."""
import os
import shutil
import subprocess

from .documents import settings_document, write_document
from .processes import median


def cli_has_get_set(ccsync):
    try:
        result = subprocess.run([ccsync, "set", "--help"], capture_output=True, text=True, timeout=10)
        return result.returncode == 0 and "USAGE" in result.stdout
    except (OSError, subprocess.SubprocessError):
        return False


def measure(bench):
    options = bench.options
    lines = ["### 3. Command line: one call on a 1 KB file", ""]
    ccsync = os.path.join(bench.binaries, "ccsync")
    if not (os.path.exists(ccsync) and cli_has_get_set(ccsync)):
        lines.append("not measured: CLI not built (no `ccsync get`/`ccsync set` in this tree)")
        bench.goals.append(("`ccsync get` <= 0.3x jq's time", "not measured", "CLI not built"))
        bench.goals.append(("`ccsync set` >= 3x faster than flock+jq+mv", "not measured", "CLI not built"))
        return "\n".join(lines) + "\n"
    if not bench.have_floor:
        return "\n".join(lines + ["not measured: no C compiler for the spawn driver", ""])
    directory = bench.fresh_directory()
    path = os.path.join(directory, "settings.json")
    write_document(path, settings_document(1024))
    jq = shutil.which("jq")
    # The build the goals are judged on: the installed one (scripts/install-cli, the Swift
    # runtime linked statically) when bench/run made it, else the plain release build.
    installed = options.installed_ccsync if options.installed_ccsync and os.access(options.installed_ccsync, os.X_OK) else None
    commands = [("true", "`/bin/true` (the cost of spawning any program)", ["true"])]
    if installed:
        commands += [
            ("get", "`ccsync get FILE counter`, installed by `scripts/install-cli`", [installed, "get", path, "counter"]),
            ("set", "`ccsync set FILE counter N` (durable: fsync file + dir), installed", [installed, "set", path, "counter", "{N}"]),
        ]
    commands += [
        ("get-dynamic", "`ccsync get FILE counter`, `swift build -c release` (Swift runtime loaded dynamically)",
         [ccsync, "get", path, "counter"]),
        ("set-dynamic", "`ccsync set FILE counter N`, `swift build -c release`", [ccsync, "set", path, "counter", "{N}"]),
    ]
    if not installed:
        commands = [(key.replace("-dynamic", ""), label, argv) for key, label, argv in commands]
    before = options.baseline_installed
    if installed and before and os.access(before, os.X_OK):
        commands.append(("get-baseline", "`ccsync get FILE counter`, the `--baseline-installed` build", [before, "get", path, "counter"]))
    if jq and shutil.which("flock"):
        commands += [
            ("jq", "`jq .counter FILE`", [jq, ".counter", path]),
            ("shell-set", "`flock FILE.lock sh -c 'jq \".counter = N\" FILE > TMP && mv TMP FILE'` (no fsync)",
             ["flock", path + ".lock", "sh", "-c", 'jq ".counter = {N}" "$0" > "$0.tmp" && mv "$0.tmp" "$0"', path]),
        ]
    commands += large_document_commands(bench, directory, ccsync)
    raw = {key: [] for key, _, _ in commands}
    spawn = bench.peer("spawn_loop")
    for round_index in range(options.rounds):
        bench.log("cli round %d/%d" % (round_index + 1, options.rounds))
        for key, _, argv in commands:
            output = subprocess.run([spawn, str(options.cli_calls)] + argv, capture_output=True, text=True, check=True).stdout
            nanoseconds, failures = (int(part) for part in output.split())
            raw[key].append({"seconds": nanoseconds / 1e9 / options.cli_calls, "failures": failures})
    shutil.rmtree(directory, ignore_errors=True)
    bench.results["cli"] = raw

    lines.append("Each command run %d times in a row by a C driver (`posix_spawnp`, `waitpid`, output to "
                 "`/dev/null`); wall time per call, spawn and exit included, median of %d rounds."
                 % (options.cli_calls, options.rounds))
    lines.append("")
    lines.append("| Command | ms per call | failed calls |")
    lines.append("|---|---|---|")
    for key, label, _ in commands:
        lines.append("| %s | %.2f | %d |" % (label, median([run["seconds"] for run in raw[key]]) * 1000,
                                             sum(run["failures"] for run in raw[key])))
    lines.append("")
    if "jq" in raw:
        failing = any(run["failures"] for runs in raw.values() for run in runs)
        get_ratio = median([a["seconds"] / b["seconds"] for a, b in zip(raw["get"], raw["jq"])])
        set_ratio = median([b["seconds"] / a["seconds"] for a, b in zip(raw["set"], raw["shell-set"])])
        get_met, set_met = get_ratio <= 0.3 and not failing, set_ratio >= 3 and not failing
        lines.append("| Comparison | Goal | Measured | Met |")
        lines.append("|---|---|---|---|")
        lines.append("| `ccsync get` time / `jq` time | <= 0.30 | %.2f | %s |" % (get_ratio, "yes" if get_met else "**no**"))
        lines.append("| `ccsync set` speed / flock+jq+mv speed | >= 3x | %.2fx | %s |" % (set_ratio, "yes" if set_met else "**no**"))
        if "get-dynamic" in raw:
            dynamic_get = median([a["seconds"] / b["seconds"] for a, b in zip(raw["get-dynamic"], raw["jq"])])
            dynamic_set = median([b["seconds"] / a["seconds"] for a, b in zip(raw["set-dynamic"], raw["shell-set"])])
            lines.append("| same, `swift build -c release` (dynamic): `get` / `jq` | | %.2f | |" % dynamic_get)
            lines.append("| same, `swift build -c release` (dynamic): `set` vs flock+jq+mv | | %.2fx | |" % dynamic_set)
        lines.append("")
        if installed:
            lines.append("The goals are judged on the command as `scripts/install-cli` installs it: the Swift runtime "
                         "and FoundationEssentials linked in statically, so a call does not load and bind a dozen "
                         "shared libraries, which is most of a short command's time in the dynamic build.")
        else:
            lines.append("The goals are judged on the dynamically linked release build: `scripts/install-cli` failed "
                         "or was not run.")
        lines.append("")
        bench.goals.append(("`ccsync get` <= 0.3x jq's time", "yes" if get_met else "no", "%.2f" % get_ratio))
        bench.goals.append(("`ccsync set` >= 3x faster than flock+jq+mv", "yes" if set_met else "no", "%.2fx" % set_ratio))
    large_document_goal(bench, raw, lines)
    if "get-baseline" in raw:
        ratio = median([a["seconds"] / b["seconds"] for a, b in zip(raw["get"], raw["get-baseline"])])
        lines.append("The installed `ccsync get` against the `--baseline-installed` build's: %.2fx its time." % ratio)
        lines.append("")
        bench.goals.append(("installed `ccsync get FILE` <= 1.1x the `--baseline-installed` build's time",
                            "yes" if ratio <= 1.1 else "no", "%.2fx" % ratio))
    return "\n".join(lines)


LARGE_GOAL = "`ccsync set` on a 1 MB hand-formatted JWCC file <= 1.2x the `--baseline-ccsync` build's `set` on the printer's layout"


def large_document_commands(bench, directory, ccsync):
    """`set` of one nested value in a 1 MB document: hand-formatted JWCC (4-space indent,
    comments), kept byte for byte but the value, against the same value in the printer's
    layout, and against the `--baseline-ccsync` build on the printer's layout. Release builds
    (dynamic) on both sides, so that the builds compare like for like."""
    tool = bench.bench_tool()
    hand, printed, before = (os.path.join(directory, name) for name in ("large.jsonc", "large.json", "large-baseline.json"))
    subprocess.run([tool, "lossless", "generate", "1", hand], check=True)
    subprocess.run([tool, "lossless", "generate", "1", printed, "printed"], check=True)
    shutil.copyfile(printed, before)
    field = "records.1500.score"
    commands = [
        ("set-1mb-hand", "`ccsync set large.jsonc %s N`: 1 MB hand-formatted JWCC, `swift build -c release`" % field,
         [ccsync, "set", hand, field, "{N}"]),
        ("set-1mb-printed", "`ccsync set large.json %s N`: 1 MB in the printer's layout, `swift build -c release`" % field,
         [ccsync, "set", printed, field, "{N}"]),
    ]
    if bench.options.baseline_ccsync:
        commands.append(("set-1mb-baseline", "the same on the printer's layout, the `--baseline-ccsync` build",
                         [os.path.abspath(bench.options.baseline_ccsync), "set", before, field, "{N}"]))
    return commands


def large_document_goal(bench, raw, lines):
    if "set-1mb-hand" not in raw:
        return
    failing = any(run["failures"] for key in ("set-1mb-hand", "set-1mb-printed", "set-1mb-baseline")
                  for run in raw.get(key, []))
    versus_printed = median([a["seconds"] / b["seconds"] for a, b in zip(raw["set-1mb-hand"], raw["set-1mb-printed"])])
    lines.append("1 MB document: `set` on the hand-formatted JWCC file takes %.2fx the time of `set` on the printer's "
                 "layout, both this build." % versus_printed)
    if "set-1mb-baseline" in raw:
        ratio = median([a["seconds"] / b["seconds"] for a, b in zip(raw["set-1mb-hand"], raw["set-1mb-baseline"])])
        lines.append("Against the `--baseline-ccsync` build's `set` on the printer's layout: %.2fx." % ratio)
        bench.goals.append((LARGE_GOAL, "yes" if ratio <= 1.2 and not failing else "no", "%.2fx" % ratio))
    else:
        bench.goals.append((LARGE_GOAL, "not measured", "no `--baseline-ccsync` (this build: %.2fx its own printer's layout)" % versus_printed))
    lines.append("")
