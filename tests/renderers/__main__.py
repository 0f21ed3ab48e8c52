"""`python -m tests.renderers [--only a,b] [--json PATH]`: the matrix's findings, summarised."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from tests.renderers.matrix import RENDERERS
from tests.renderers.run import run_matrix, summary


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.renderers", description=__doc__)
    parser.add_argument("--only", help="comma-separated renderer names", default="")
    parser.add_argument("--json", type=Path, help="write every finding to this file")
    arguments = parser.parse_args()
    renderers = arguments.only.split(",") if arguments.only else list(RENDERERS)
    start = time.perf_counter()
    run = run_matrix(renderers, workers=os.cpu_count() or 1)
    print(summary(run))
    print(f"\ntotal {time.perf_counter() - start:.1f} s")
    if arguments.json:
        arguments.json.write_text(
            json.dumps(
                [
                    {
                        "renderer": broken.renderer,
                        "family": broken.case.family,
                        "field": broken.case.field,
                        "strings": broken.case.strings,
                        "findings": [[f.kind, f.detail] for f in broken.findings],
                    }
                    for broken in run.broken
                ],
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
