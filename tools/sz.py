"""Lines of code per folder of the package: a visible size budget (tinygrad's sz.py), printed by CI."""

from __future__ import annotations

from pathlib import Path


def main() -> None:
    root = Path(__file__).resolve().parent.parent / "tileworkbench"
    totals: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        folder = str(path.parent.relative_to(root.parent))
        totals[folder] = totals.get(folder, 0) + sum(1 for line in path.read_text().splitlines() if line.strip())
    width = max(len(f) for f in totals)
    for folder, count in sorted(totals.items()):
        print(f"{folder:<{width}}  {count:6d}")
    print(f"{'total':<{width}}  {sum(totals.values()):6d}")


if __name__ == "__main__":
    main()
