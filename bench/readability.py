"""How plain each page's first words are: the first text under every page's title, read through the page itself
(AppTest), its first two sentences scored by textstat (Flesch reading ease: higher is easier, 60-70 plain English;
Flesch-Kincaid grade: the school year that reads it).

    python bench/readability.py [--write]

--write adds the table to BENCHMARKS.md. Measured before and after the openings were written: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from app_support import open_page  # noqa: E402
from readability_support import first_sentences, opening, scores  # noqa: E402

from ui.pages import PAGES  # noqa: E402

INTRO = ("The first text under each page's title, as the page draws it, its first two sentences scored by "
         "textstat 0.7.8 (`python bench/readability.py`): Flesch reading ease (higher is easier; 60–70 is plain "
         "English) and the Flesch–Kincaid grade. Before the plain openings (1c81a4e, 2 December 2026), the same "
         "measure gave a median ease of 63 (worst 19, the Positional encoding page's heading) and a median grade of "
         "8.2 (worst 22.6, the Cost page's one 60-word sentence); three pages opened with a heading, not a sentence.")
def measure() -> list[tuple[str, str, float, float]]:
    rows = []
    for name, title, _icon, _says in PAGES:
        words = first_sentences(opening(open_page(name)))
        rows.append((title, words, *scores(words)))
    return rows


def table(rows) -> list[str]:
    lines = ["| page | reading ease | grade | first sentences |", "| --- | --- | --- | --- |"]
    lines += [f"| {title} | {ease:.0f} | {grade:.1f} | {words} |" for title, words, ease, grade in rows]
    eases, grades = [row[2] for row in rows], [row[3] for row in rows]
    lines.append(f"| **median** (worst) | {statistics.median(eases):.0f} ({min(eases):.0f}) | "
                 f"{statistics.median(grades):.1f} ({max(grades):.1f}) | |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="add the table to BENCHMARKS.md")
    args = parser.parse_args()
    lines = table(measure())
    print("\n".join(lines))
    if args.write:
        from report import write_section
        write_section("Readability of the pages' first sentences", INTRO, lines)


if __name__ == "__main__":
    main()
