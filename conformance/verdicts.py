#!/usr/bin/env python3
"""Extract Autobahn verdicts from a report and compare them with the committed expectation.

    verdicts.py extract REPORT_DIR            > conformance/expected/ROLE.json
    verdicts.py compare REPORT_DIR EXPECTED.json [--cases PATTERNS] [--exclude PATTERNS]
                        [--regressions FILE]

The expectation maps each case id to its verdict (behavior, and behaviorClose when that is
not OK). `compare` fails (exit 1) when a case is FAILED, missing from the report, or its
pass class changed (passed = OK, NON-STRICT, INFORMATIONAL; UNIMPLEMENTED is its own class).
OK <-> NON-STRICT flips are printed but do not fail: the suite itself says some of those are
timing-dependent. The last line is `autobahn-diff: N cases as expected (P passed, U
unimplemented), M differ`.

With `--cases` (wstest's comma-separated patterns, as the run was given them) only the expected
cases those patterns select (less those `--exclude` selects) are required; the default tier of CI runs a sample this way. With
`--regressions FILE`, every case that FAILED or changed class is appended to FILE (one id a
line, kept sorted, no duplicates) so that it joins the sample from then on: commit the file.
"""
import fnmatch
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
    args = sys.argv[1:]
    patterns, excluded, regressions = None, [], None
    while len(args) > 3 and args[-2] in ("--cases", "--exclude", "--regressions"):
        if args[-2] == "--cases":
            patterns = [p for p in args[-1].replace(" ", ",").split(",") if p]
        elif args[-2] == "--exclude":
            excluded = [p for p in args[-1].replace(" ", ",").split(",") if p]
        else:
            regressions = args[-1]
        args = args[:-2]
    if len(args) != 3 or args[0] != "compare":
        sys.exit(__doc__)
    actual = load(args[1])
    with open(args[2], encoding="utf-8") as f:
        expected = json.load(f)
    if patterns is not None or excluded:
        expected = {
            case: verdict
            for case, verdict in expected.items()
            if any(fnmatch.fnmatchcase(case, p) for p in patterns or ["*"])
            and not any(fnmatch.fnmatchcase(case, p) for p in excluded)
        }
        if not expected:
            sys.exit("verdicts.py: the patterns select no expected case")
    differing = []
    passed = failed = 0
    counts = {"passed": 0, "UNIMPLEMENTED": 0}
    for case in sorted(set(actual) | set(expected), key=key):
        got, want = actual.get(case), expected.get(case)
        if got is None:
            # Not a verdict (the run broke off): not recorded as a regression.
            print("MISSING  %s (expected %s)" % (case, want))
            failed += 1
        elif got == "FAILED":
            print("FAILED   %s (expected %s)" % (case, want))
            differing.append(case)
            failed += 1
        elif want is None:
            print("NEW      %s: %s (not in the expectation)" % (case, got))
            passed += 1
        elif klass(got) != klass(want):
            print("CHANGED  %s: %s, expected %s" % (case, got, want))
            differing.append(case)
            failed += 1
        else:
            if got != want:
                print("note     %s: %s, expected %s (same pass class)" % (case, got, want))
            passed += 1
        if got is not None and klass(got) in counts:
            counts[klass(got)] += 1
    print("autobahn-diff: %d cases as expected (%d passed, %d unimplemented), %d differ"
          % (passed, counts["passed"], counts["UNIMPLEMENTED"], failed))
    if differing and regressions:
        record(regressions, differing)
    return 1 if failed else 0


def record(path, cases):
    """Adds `cases` to the regression list at `path`, keeping its header comments."""
    header, known = [], set()
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                text = line.strip()
                if text.startswith("#") or not text:
                    header.append(line.rstrip("\n"))
                else:
                    known.add(text)
    added = sorted(set(cases) - known, key=key)
    if not added:
        return
    with open(path, "w", encoding="utf-8") as f:
        for line in header:
            f.write(line + "\n")
        for case in sorted(known | set(added), key=key):
            f.write(case + "\n")
    print("autobahn-diff: added %s to %s; commit it so every later run includes them"
          % (", ".join(added), path))


if __name__ == "__main__":
    sys.exit(main())
