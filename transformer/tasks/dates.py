"""Character-level date normalisation: ``Tuesday, 24 November 2026`` -> ``2026-11-24``.

Every character typed is a token, spaces and punctuation included, on both sides. Sources come in
six forms (below), years 1900–2099, with the right weekday; the target is the ISO date.
"""

from __future__ import annotations

import datetime
import re

import numpy as np

from transformer.tasks.base import Task

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FORMS = ("long", "short", "us_long", "us_short", "weekday", "numeric")
YEARS = (1900, 2099)
_MONTH_NUMBER = {**{name: i + 1 for i, name in enumerate(MONTHS)}, **{name[:3]: i + 1 for i, name in enumerate(MONTHS)}}
_MONTH = "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True))
_PATTERNS = (  # (regex, named groups); every form's fields by name
    re.compile(rf"(?:(?P<weekday>{'|'.join(WEEKDAYS)}), )?(?P<day>\d{{1,2}}) (?P<month>{_MONTH}) (?P<year>\d{{4}})"),
    re.compile(rf"(?P<month>{_MONTH}) (?P<day>\d{{1,2}}), (?P<year>\d{{4}})"),
    re.compile(r"(?P<day>\d{2})/(?P<month>\d{2})/(?P<year>\d{4})"),
)


def date_text(date: datetime.date, form: str) -> str:
    """``date`` written in ``form`` (one of `FORMS`)."""
    month, day, year = MONTHS[date.month - 1], date.day, date.year
    return {
        "long": f"{day} {month} {year}",
        "short": f"{day} {month[:3]} {year}",
        "us_long": f"{month} {day}, {year}",
        "us_short": f"{month[:3]} {day}, {year}",
        "weekday": f"{WEEKDAYS[date.weekday()]}, {day} {month} {year}",
        "numeric": f"{day:02d}/{date.month:02d}/{year}",
    }[form]


def parse(text: str) -> tuple[datetime.date, re.Match]:
    """The date ``text`` names and the match of its fields; ValueError naming the text when it is none."""
    for pattern in _PATTERNS:
        match = pattern.fullmatch(text)
        if match:
            month = match["month"]
            number = int(month) if month.isdigit() else _MONTH_NUMBER[month]
            try:
                date = datetime.date(int(match["year"]), number, int(match["day"]))
            except ValueError as error:
                raise ValueError(f"{text!r} is not a date: {error}") from None
            if not YEARS[0] <= date.year <= YEARS[1]:
                raise ValueError(f"Years run from {YEARS[0]} to {YEARS[1]}. Received: {text!r}")
            return date, match
    raise ValueError(f"{text!r} is not a date in a form this task reads (e.g. '24 November 2026', "
                     "'Nov 24, 2026', 'Tuesday, 24 November 2026', '24/11/2026').")


def alignment(text: str) -> list[int | None]:
    """For each character of the ISO date of ``text``, the index of the source character it comes from:
    year digits from the year's, month digits from the month number's or the month name's first letter,
    day digits from the day's (a leading zero the source does not write: None), hyphens None."""
    date, match = parse(text)
    year = [match.start("year") + i for i in range(4)]
    month = [match.start("month") + i for i in range(2)] if match["month"].isdigit() else [match.start("month")] * 2
    day = [match.start("day") + i for i in range(2)] if len(match["day"]) == 2 else [None, match.start("day")]
    return [*year, None, *month, None, *day]


class DatesTask(Task):
    name = "dates"
    description = ("Write a date as ISO 2026-11-24, character by character: the year's digits should read the "
                   "year, the month's the month, the day's the day; the weekday is ignored.")
    tokens = tuple(sorted(set("0123456789 ,/-" + "".join(MONTHS) + "".join(WEEKDAYS))))
    lengths = (8, 28)  # "1/1/2000" is 10; "Wednesday, 30 September 2026" is 28
    example = "Tuesday, 24 November 2026\n5 Mar 1999\nJuly 4, 1976\n31/12/2099"

    def source_tokens(self, text: str) -> list[str]:
        return list(text.strip())

    def source_text(self, tokens) -> str:
        return "".join(tokens)  # a date's tokens are its characters

    def target_text(self, tokens) -> str:
        return "".join(tokens)

    def target_length(self, source_length: int) -> int:
        return 10

    def solve(self, tokens) -> list[str]:
        return list(parse("".join(tokens))[0].isoformat())

    def random_date(self, rng: np.random.Generator) -> datetime.date:
        first, last = datetime.date(YEARS[0], 1, 1).toordinal(), datetime.date(YEARS[1], 12, 31).toordinal()
        return datetime.date.fromordinal(int(rng.integers(first, last + 1)))

    def sample(self, rng, lengths=None):
        return list(date_text(self.random_date(rng), FORMS[int(rng.integers(len(FORMS)))]))

    def align(self, tokens) -> list[int | None]:
        return alignment("".join(tokens))

    def examples(self, count, seed=0):
        rng = np.random.default_rng(seed)
        triples = []
        for _ in range(count):
            text = "".join(self.sample(rng))
            triples.append((text, parse(text)[0].isoformat(), alignment(text)))
        return triples
