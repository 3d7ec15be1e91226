"""6b. Schema: validating a document against a JSON Schema of its shape, against parsing it.

The timing itself is `ccsync-bench schema` (Sources/CCSyncBench/SchemaBenchmark.swift): the
codec's 10 KB settings document (7 services) and a schema of its shape (types, required
members, properties, one pattern), validation timed in rounds alternating with the parse and
the ratio taken round by round. This step runs it and turns its lines into a table and the
validation issue's goal: validating takes less time than parsing.
"""
import re
import subprocess

GOAL = "schema: validating the 10 KB codec document against a schema of its shape takes less time than parsing it"
SERVICES = 7  # the codec benchmark's 10 KB document


def measure(bench):
    rounds = max(9, bench.options.codec_rounds)
    lines = ["### 6b. Schema: validation against parsing, the 10 KB codec document", ""]
    bench.log("schema (%d rounds)" % rounds)
    result = subprocess.run([bench.bench_tool(), "schema", "--services", str(SERVICES), "--rounds", str(rounds)],
                            capture_output=True, text=True)
    figures = {}
    for line in result.stdout.split("\n"):
        found = re.match(r"\s*(compile schema|parse document|isValid|validate)\s+([\d.]+) µs(?:\s+\((\d+)% of parse time\))?", line)
        if found:
            figures[found.group(1)] = (float(found.group(2)), int(found.group(3)) if found.group(3) else None)
    size = re.search(r"(\d+)-byte document", result.stdout)
    if result.returncode != 0 or "validate" not in figures or "parse document" not in figures:
        lines.append("not measured: `ccsync-bench schema` failed: %s" % (result.stderr.strip() or result.returncode))
        bench.goals.append((GOAL, "not measured", "schema benchmark failed"))
        return "\n".join(lines) + "\n"
    lines.append(
        "`ccsync-bench schema --services %d --rounds %d`: the codec's settings document (%s bytes, pretty) and a schema "
        "of its shape (types, required members, properties, `additionalProperties`, one `pattern`, `$ref`s), compiled "
        "once. Each check is timed in rounds alternating with our parse of the document's text; the share is the "
        "median of the rounds' ratios. `isValid` stops at the first failure; `validate` collects every failure with "
        "its JSON pointer, as the gate does." % (SERVICES, rounds, size.group(1) if size else "?"))
    lines.append("")
    lines.append("| Step | µs (median) | share of the parse's time |")
    lines.append("|---|---|---|")
    for step in ("compile schema", "parse document", "isValid", "validate"):
        if step in figures:
            microseconds, share = figures[step]
            lines.append("| %s | %.1f | %s |" % (step, microseconds, "" if share is None else "%d%%" % share))
    lines.append("")
    share = figures["validate"][1]
    bench.goals.append((GOAL, "yes" if share is not None and share < 100 else "no",
                        "validate %d%% of the parse's time (%.1f µs against %.1f µs)" % (
                            share, figures["validate"][0], figures["parse document"][0])))
    return "\n".join(lines)
