#!/usr/bin/env python3
"""Runs every glm5c test (CTest: GoogleTest unit tests and the bounded fuzz run; lit: the FileCheck
suite) and ends with one summary line counting passed, failed and skipped tests. A GPU test on a
machine without a GPU counts as skipped, never as passed. Exit status 1 when anything failed.

usage: run_tests.py [--build-dir build] [--jobs N]
"""
import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def count_junit(path):
    """(passed, failed, skipped) from a JUnit XML file written by ctest or lit."""
    passed = failed = skipped = 0
    failed_names = []
    if not os.path.exists(path):
        return 0, 1, 0, ["(no results: %s)" % path]
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "")
        if case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed += 1
            failed_names.append(case.get("classname", "") + "." + case.get("name", ""))
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, failed_names


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(root, "build"))
    ap.add_argument("--jobs", default=str(os.cpu_count() or 2))
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    results = os.path.join(build, "test-results")
    os.makedirs(results, exist_ok=True)
    ctest_xml = os.path.join(results, "ctest.xml")
    lit_xml = os.path.join(results, "lit.xml")
    for f in (ctest_xml, lit_xml):
        if os.path.exists(f):
            os.remove(f)

    print("== unit tests and fuzzing (ctest)", flush=True)
    subprocess.call(["ctest", "--test-dir", build, "--output-on-failure", "-j", args.jobs,
                     "--output-junit", ctest_xml])
    print("== lit suite", flush=True)
    lit = "/usr/lib/llvm-22/bin/lit"
    with open(os.path.join(build, "CMakeCache.txt")) as cache:
        for line in cache:
            if line.startswith("GLM5C_LIT:"):
                lit = line.split("=", 1)[1].strip()
    subprocess.call([lit, "-sv", "-j", args.jobs, "--xunit-xml-output", lit_xml,
                     os.path.join(build, "test")])

    total = [0, 0, 0]
    parts = []
    failures = []
    for label, path in (("unit+fuzz", ctest_xml), ("lit", lit_xml)):
        p, f, s, names = count_junit(path)
        total = [total[0] + p, total[1] + f, total[2] + s]
        failures += names
        parts.append("%s %d/%d/%d" % (label, p, f, s))
    for name in failures:
        print("FAILED: " + name)
    print("glm5c tests: %d passed, %d failed, %d skipped (passed/failed/skipped: %s)"
          % (total[0], total[1], total[2], ", ".join(parts)))
    return 1 if total[1] else 0


if __name__ == "__main__":
    sys.exit(main())
