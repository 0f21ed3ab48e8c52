"""What mutmut leaves to us: equivalents with reasons, survivors re-run on the whole suite, a score.

Run from the repository root after `mutmut run`; mutmut's verdicts are read from its public CLI
(`mutmut results --all true`, `mutmut show NAME`), never from its files under `mutants/`.
Equivalents (`tools/equivalent_mutants.toml`) are `[mutant."NAME"]` tables of `reason`, `tried`
(the input tried) and `change` (the `+` lines of `mutmut show`, joined by " / ": an edit can
renumber a function's mutants). One missing a field is refused; one naming no mutant, a killed
one or another change is stale. Every other survivor runs again on the whole non-slow suite in
`mutants/`, activated as mutmut does (its trampolines read `MUTANT_UNDER_TEST`), with `mutants/`
on `PYTHONPATH` for tests that start Python; a run with no mutant sets aside tests failing anyway.
score = killed / (total - equivalent).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

KILLED = {"killed", "timeout", "caught by type check", "segfault"}
RERUN = {"survived", "no tests"}
FIELDS = {"reason", "tried", "change"}


def mutmut(*args: str) -> str:
    done = subprocess.run(["mutmut", *args], capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"mutmut {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def change_of(name: str) -> str:
    lines = mutmut("show", name).splitlines()
    return " / ".join(line[1:].strip() for line in lines if line[:1] == "+" and line[:3] != "+++")


def equivalents(path: Path) -> dict[str, dict[str, str]]:
    entries: dict[str, dict[str, str]] = tomllib.loads(path.read_text("utf-8")).get("mutant", {})
    for name, entry in entries.items():
        if set(entry) != FIELDS or not all(str(value).strip() for value in entry.values()):
            sys.exit(f"{path}: [mutant.{name!r}] needs exactly {sorted(FIELDS)}, none empty")
    return entries


def pytest(mutant: str, args: list[str], timeout: float | None) -> tuple[int | None, str, float]:
    """Run the suite in mutants/ with `mutant` active: exit code (None on timeout), output, s."""
    path = [str(Path("mutants").resolve()), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "MUTANT_UNDER_TEST": mutant, "PYTHONPATH": os.pathsep.join(path)}
    command = [sys.executable, "-m", "pytest", "--rootdir=.", "-q", "-rfE", "-p", "no:randomly"]
    start = time.monotonic()
    with subprocess.Popen(
        [*command, *args], cwd="mutants", env={**env, "PY_IGNORE_IMPORTMISMATCH": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    ) as run:  # fmt: skip
        try:
            out = run.communicate(timeout=timeout)[0]
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)  # and whatever the tests started
            return None, run.communicate()[0], time.monotonic() - start
    return run.returncode, out, time.monotonic() - start


def rerun(names: list[str], timeout_factor: float) -> set[str]:
    """Run each mutant against the whole suite; return those it kills (a timeout kills)."""
    config = tomllib.loads(Path("pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    args: list[str] = list(config.get("pytest_add_cli_args", []))
    code, out, clean = pytest("", args, None)
    aside = [
        line.split(" - ")[0].split(" ", 1)[1]
        for line in out.splitlines()
        if line.startswith(("FAILED ", "ERROR "))
    ]
    if code not in (0, 1) or (code == 1 and not aside):
        sys.exit(f"the suite does not run in mutants/ (exit {code}):\n{out[-3000:]}")
    print(f"clean whole-suite run: {clean:.0f} s; tests failing without a mutant, set aside:")
    print("".join(f"  {test}\n" for test in aside) or "  none\n", end="")
    args += ["-x", *(f"--deselect={test}" for test in aside)]
    killed: set[str] = set()
    for name in names:
        code, _, took = pytest(name, args, max(60.0, timeout_factor * clean))
        if code in (4, 5):
            sys.exit(f"pytest could not run the suite for {name} (exit {code})")
        verdict = {0: "survived", None: "timeout"}.get(code, "killed")
        print(f"  whole suite, {took:4.0f} s: {verdict:8} {name}")
        if code != 0:
            killed.add(name)
    return killed


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--equivalents", type=Path, default=Path("tools/equivalent_mutants.toml"))
    add("--fail-under", type=float, metavar="PCT", help="exit 1 if the score is below PCT")
    add("--only", action="append", metavar="GLOB", help="re-run only survivors matching GLOB")
    add("--no-rerun", action="store_true", help="score mutmut's own verdicts, re-running nothing")
    add("--timeout-factor", type=float, default=3.0, help="x the clean run: a re-run's timeout")
    options = parser.parse_args()

    lines = [
        line.strip().rpartition(": ") for line in mutmut("results", "--all", "true").split("\n")
    ]
    status = {name: verdict for name, _, verdict in lines if name}
    if not status:
        sys.exit("mutmut has no results here: run `mutmut run` first")
    listed = equivalents(options.equivalents)
    stale = {name: "no such mutant" for name in listed if name not in status}
    stale |= {name: "mutmut killed it" for name in listed if status.get(name) in KILLED}
    for name in sorted(listed.keys() - stale.keys()):
        if (now := change_of(name)) != listed[name]["change"]:
            stale[name] = f"its change is now {now!r}"
    equivalent = listed.keys() - stale.keys()

    counts = Counter(status.values())
    print("mutmut: " + ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items())))
    print(
        "".join(f"stale equivalent: {name}: {why}\n" for name, why in sorted(stale.items())), end=""
    )
    if unsure := sum(n for verdict, n in counts.items() if verdict not in KILLED | RERUN):
        print(f"warning: {unsure} mutants neither killed nor survived: is the run finished?")
    survivors = sorted(n for n, v in status.items() if v in RERUN and n not in equivalent)
    killed = sum(1 for n, v in status.items() if v in KILLED and n not in equivalent)
    chosen = [n for n in survivors if any(fnmatch.fnmatch(n, p) for p in options.only or ["*"])]
    if chosen and not options.no_rerun:
        whole_suite_kills = rerun(chosen, options.timeout_factor)
        survivors = [name for name in survivors if name not in whole_suite_kills]
        killed += len(whole_suite_kills)

    print(f"\nSurvivors ({len(survivors)}): what each changes (`mutmut show NAME` for the diff)")
    for name in survivors:
        note = "" if name in chosen and not options.no_rerun else "  [not re-run]"
        print(f"  {name}{note}\n      {change_of(name)}")
    print(f"Equivalent, not scored ({len(equivalent)}):")
    for name in sorted(equivalent):
        print(f"  {name}: {listed[name]['reason']}\n      tried: {listed[name]['tried']}")
    scored = len(status) - len(equivalent)
    score = 100.0 * killed / scored if scored else 100.0
    print(f"\nscore = killed / (total - equivalent) = {killed} / {scored} = {score:.1f}%")
    return 1 if options.fail_under is not None and score < options.fail_under else 0


if __name__ == "__main__":
    sys.exit(main())
