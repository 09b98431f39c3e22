"""Compare the CSV tables of two report folders (``agora report --out``), e.g. the report of a
study before and after a change that should not change its numbers.

Numbers must agree to a relative 1e-6 (absolute 1e-12 near zero), everything else exactly; each
differing cell is printed with the first two columns of its row. The exit status is 1 when a
table or a cell differs.

Run: ``.venv/bin/python benchmarks/compare_reports.py OLD_FOLDER NEW_FOLDER [--rtol 1e-6]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def differing_cells(old: pd.DataFrame, new: pd.DataFrame, rtol: float) -> list[tuple[int, str]]:
    """(row, column) of every cell that differs: numbers beyond ``rtol``, other values as text."""
    out = []
    for col in old.columns:
        a, b = old[col], new[col]
        if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
            x, y = a.to_numpy(float), b.to_numpy(float)
            same = (np.isnan(x) & np.isnan(y)) | np.isclose(x, y, rtol=rtol, atol=1e-12)
        else:
            same = ((a.isna() & b.isna()) | (a.astype(str) == b.astype(str))).to_numpy()
        out += [(int(i), col) for i in np.flatnonzero(~same)]
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rtol", type=float, default=1e-6)
    args = ap.parse_args()
    old_dir, new_dir = Path(args.old), Path(args.new)
    names = sorted(p.name for p in old_dir.glob("*.csv"))
    other = sorted(p.name for p in new_dir.glob("*.csv"))
    bad = 0
    for name in sorted(set(names) ^ set(other)):
        print(f"{name}: only in {'the old' if name in names else 'the new'} folder")
        bad += 1
    for name in sorted(set(names) & set(other)):
        old, new = pd.read_csv(old_dir / name), pd.read_csv(new_dir / name)
        if list(old.columns) != list(new.columns) or len(old) != len(new):
            print(f"{name}: columns or row count differ")
            bad += 1
            continue
        for i, col in differing_cells(old, new, args.rtol):
            key = ", ".join(str(v) for v in old.iloc[i, :2])
            print(f"{name} row {i} ({key}) {col}: {old[col].iloc[i]!r} -> {new[col].iloc[i]!r}")
            bad += 1
    print(f"{len(set(names) & set(other))} tables compared, {bad} difference(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
