"""What making and removing a trial's workspace costs, copy against read-only (issue 38).

    python bench/workspace_speed.py [TREE ...] [--reps 20]

Each TREE is a checkout (a folder); without one, the demo's (demo/shop.bundle at the config's
commit, cloned into a temporary folder, .git included, as a run's checkout is). For each
tree and mode, `mcptrials.run.trial.Sandbox.create(tree, None, mode)` then `.remove()`,
`--reps` times: the median CPU (this process's user + system: the copy and its removal run
in-process) and wall per trial. `copy` copies the checkout (shutil.copytree) and removes the
copy; `read-only` (a scenario's `workspace: read-only`) makes a symlink to the checkout,
which every sandbox binds read-only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mcptrials.run.trial import COPY, READ_ONLY, Sandbox  # noqa: E402


def demo_checkout(tmp: Path) -> Path:
    import yaml

    from mcptrials.prepare.checkout import checkout

    repo = yaml.safe_load((ROOT / "config.yaml").read_text())["repos"]["demo"]
    return Path(checkout("demo", str(ROOT / repo["url"]), "demo", repo["commit"], tmp / "demo")["tree"])


def files_of(tree: Path) -> tuple[int, int]:
    files = [p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()]
    return len(files), sum(p.stat().st_size for p in files)


def label(tree: Path) -> str:
    """A checkout's folder is `<name>/tree`: name it by its parent."""
    return f"{tree.parent.name}/{tree.name}" if tree.name == "tree" else tree.name


def measure(tree: Path, mode: str, reps: int) -> tuple[float, float]:
    """(median CPU s, median wall s) of one create + remove."""
    cpu, wall = [], []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        Sandbox.create(str(tree), None, mode).remove()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="*", type=Path)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcptrials-ws-bench-") as d:
        trees = args.trees or [demo_checkout(Path(d))]
        print(f"create + remove, median of {args.reps}")
        print("| tree | files | MB | copy CPU | copy wall | read-only CPU | read-only wall |")
        print("|---|---|---|---|---|---|---|")
        for tree in trees:
            n, size = files_of(tree)
            (cc, cw), (rc, rw) = measure(tree, COPY, args.reps), measure(tree, READ_ONLY, args.reps)
            print(
                f"| {label(tree)} | {n} | {size / 1e6:.1f} | {cc * 1e3:.1f} ms | {cw * 1e3:.1f} ms "
                f"| {rc * 1e3:.2f} ms | {rw * 1e3:.2f} ms |",
                flush=True,
            )


if __name__ == "__main__":
    main()
