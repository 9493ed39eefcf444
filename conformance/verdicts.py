#!/usr/bin/env python3
"""Extract Autobahn verdicts from a report and compare them with the committed expectation.

    verdicts.py extract REPORT_DIR            > conformance/expected/ROLE.json
    verdicts.py compare REPORT_DIR EXPECTED.json

The expectation maps each case id to its verdict (behavior, and behaviorClose when that is
not OK). `compare` fails (exit 1) when a case is FAILED, missing from the report, or its
pass class changed (passed = OK, NON-STRICT, INFORMATIONAL; UNIMPLEMENTED is its own class).
OK <-> NON-STRICT flips are printed but do not fail: the suite itself says some of those are
timing-dependent. The last line is `autobahn-diff: N cases as expected (P passed, U
unimplemented), M differ`.
"""
import json
import os
import sys

PASSED = {"OK", "NON-STRICT", "INFORMATIONAL"}


def load(report_dir):
    with open(os.path.join(report_dir, "index.json"), encoding="utf-8") as f:
        data = json.load(f)
    if len(data) != 1:
        sys.exit("verdicts.py: expected one agent in %s, found %s" % (report_dir, sorted(data)))
    (cases,) = data.values()
    return {case: res.get("behavior", "FAILED") for case, res in cases.items()}


def klass(verdict):
    if verdict in PASSED:
        return "passed"
    return verdict


def key(case):
    return [int(p) if p.isdigit() else p for p in case.split(".")]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "extract":
        verdicts = load(sys.argv[2])
        json.dump(dict(sorted(verdicts.items(), key=lambda kv: key(kv[0]))), sys.stdout, indent=0)
        print()
        return 0
    if len(sys.argv) != 4 or sys.argv[1] != "compare":
        sys.exit(__doc__)
    actual = load(sys.argv[2])
    with open(sys.argv[3], encoding="utf-8") as f:
        expected = json.load(f)
    passed = failed = 0
    counts = {"passed": 0, "UNIMPLEMENTED": 0}
    for case in sorted(set(actual) | set(expected), key=key):
        got, want = actual.get(case), expected.get(case)
        if got is None:
            print("MISSING  %s (expected %s)" % (case, want))
            failed += 1
        elif got == "FAILED":
            print("FAILED   %s (expected %s)" % (case, want))
            failed += 1
        elif want is None:
            print("NEW      %s: %s (not in the expectation)" % (case, got))
            passed += 1
        elif klass(got) != klass(want):
            print("CHANGED  %s: %s, expected %s" % (case, got, want))
            failed += 1
        else:
            if got != want:
                print("note     %s: %s, expected %s (same pass class)" % (case, got, want))
            passed += 1
        if got is not None and klass(got) in counts:
            counts[klass(got)] += 1
    print("autobahn-diff: %d cases as expected (%d passed, %d unimplemented), %d differ"
          % (passed, counts["passed"], counts["UNIMPLEMENTED"], failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
