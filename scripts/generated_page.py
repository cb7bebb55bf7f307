"""The command line shared by the scripts that generate a page of docs/ from the package (``--check`` for tests)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable


def main(target: Path, render: Callable[[], str], script: str, description: str, argv: list[str] | None = None) -> int:
    """Rewrite ``target`` with ``render()``; with ``--check``, exit 1 (saying to run ``script``) when it differs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {target.name} is out of date")
    args = parser.parse_args(argv)
    text = render()
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    if args.check:
        if current != text:
            print(f"{target} is out of date: run python {script}")
            return 1
        return 0
    if current != text:
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    return 0
