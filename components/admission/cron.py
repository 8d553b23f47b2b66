"""CronJob schedules as Kubernetes reads them: kube-apiserver validates `spec.schedule` with robfig/cron v3's
`ParseStandard` and kube-controller-manager runs it with the same parser, so a schedule is what that parser accepts
(robfig/cron v3.0.1 parser.go getRange/mustParseInt, spec.go bounds and dayMatches), and how far apart its runs are."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

from .rules import rule

__all__ = ["CRON_SCHEDULE", "CRON_TIME_ZONE", "CronSpec", "parse_cron", "longest_gap_minutes"]

CRON_SCHEDULE = rule(
    "k8s-cronjob-schedule",
    "A CronJob schedule is five fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan-dec, day of week "
    "0-6 or sun-sat) separated by white space as Go knows it (the control characters U+001C-U+001F are none), of `*`, "
    "`?`, numbers in ASCII digits, ranges low-high with low <= high and /steps of at least 1; or exactly one of "
    "@yearly, @monthly, @weekly, @daily, @hourly, with no white space around it; when both day fields are restricted "
    "a day matching either runs.",
    "Kubernetes pkg/apis/batch/validation (cron.ParseStandard); robfig/cron v3.0.1 parser.go (Parse: strings.Fields, "
    "and a schedule starting with @ matched whole by parseDescriptor; getRange, mustParseInt: strconv.Atoi) and "
    "spec.go (bounds, dayMatches); Go src/unicode/graphic.go IsSpace; https://kubernetes.io/docs/concepts/workloads/"
    "controllers/cron-jobs/#schedule-syntax",
)
CRON_TIME_ZONE = rule(
    "k8s-cronjob-no-tz",
    "A CronJob schedule names no TZ= or CRON_TZ= (the time zone is spec.timeZone).",
    'https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones ("Starting with Kubernetes '
    "1.29 if you try to set a schedule that includes TZ or CRON_TZ timezone specification, Kubernetes will fail to "
    'create the resource with a validation error")',
)

# robfig/cron v3 spec.go: bounds and names (names are matched case-insensitively, parser.go parseIntOrName).
_MONTHS = {
    m: i
    for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)
}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
# parser.go parseDescriptor: the descriptors as the five fields they stand for (@every is left out: this project
# takes calendar schedules only).
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Go's unicode.IsSpace, what strings.Fields splits a schedule on (Go src/unicode/graphic.go IsSpace: \t \n \v \f \r,
# space, U+0085, U+00A0, and the White_Space property above Latin-1). Python's str.split() also splits on U+001C-U+001F,
# which Go keeps inside a field, so a schedule is split here on Go's set only.
_GO_SPACE_CHARS = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
_GO_SPACE = re.compile(f"[{_GO_SPACE_CHARS}]+")
_ATOI = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi: an optional sign and ASCII digits only (Python's \d takes more)


@dataclass(frozen=True)
class CronSpec:
    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    any_day: bool  # a day field is `*` (or `?`) without a step: both day fields must match (spec.go dayMatches)

    def runs_on(self, day: datetime.date) -> bool:
        if day.month not in self.months:
            return False
        dom, dow = day.day in self.days_of_month, (day.isoweekday() % 7) in self.days_of_week
        return (dom and dow) if self.any_day else (dom or dow)


def _number(text: str, name: str, names: dict[str, int], expr: str) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not _ATOI.fullmatch(text) or len(text) > 18:
        raise ValueError(
            f"{expr!r}: {text!r} is not a {name} number (ASCII digits 0-9"
            + (f", or {', '.join(names)}" if names else "")
            + ")"
        )
    value = int(text)
    if value < 0:
        raise ValueError(f"{expr!r}: negative numbers are not allowed")
    return value


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """The values of one field, and whether it is a plain `*`/`?` (robfig's starBit)."""
    values: set[int] = set()
    star = False
    for expr in (part for part in text.split(",") if part):  # strings.FieldsFunc drops empty parts
        range_and_step = expr.split("/")
        if len(range_and_step) > 2:
            raise ValueError(f"{expr!r}: too many slashes")
        bounds = range_and_step[0].split("-")
        if bounds[0] in ("*", "?"):
            start, end, this_star = low, high, True
        else:
            if len(bounds) > 2:
                raise ValueError(f"{expr!r}: too many hyphens")
            start = _number(bounds[0], name, names, expr)
            end = _number(bounds[1], name, names, expr) if len(bounds) == 2 else start
            this_star = False
        step = 1
        if len(range_and_step) == 2:
            step = _number(range_and_step[1], name, {}, expr)
            if len(bounds) == 1:
                end = high  # "5/15": from 5 to the field's end
            if step > 1:
                this_star = False
        if start < low:
            raise ValueError(f"{expr!r}: {start} is below the {name}'s minimum {low}")
        if end > high:
            raise ValueError(f"{expr!r}: {end} is above the {name}'s maximum {high}")
        if start > end:
            raise ValueError(f"{expr!r}: the range starts at {start}, after its end {end}")
        if step == 0:
            raise ValueError(f"{expr!r}: a step is at least 1")
        values.update(range(start, end + 1, step))
        star = star or this_star
    return values, star


def parse_cron(schedule: str) -> CronSpec:
    """The schedule as kube-apiserver validates it; ValueError says what is wrong and what is allowed."""
    if not isinstance(schedule, str) or not schedule.strip():
        raise ValueError("a CronJob schedule is five fields: minute hour day-of-month month day-of-week")
    if "TZ" in schedule:
        raise ValueError("a schedule cannot name TZ= or CRON_TZ= (Kubernetes refuses it; the check runs in UTC)")
    # parser.go Parse: a schedule starting with @ is a descriptor matched whole (parseDescriptor), so white space
    # around it is refused; one starting otherwise is split into fields (strings.Fields), where "@hourly" is one field.
    text = _DESCRIPTORS.get(schedule, schedule)
    if text.startswith("@") or (text is schedule and schedule.lstrip(_GO_SPACE_CHARS).startswith("@")):
        raise ValueError(
            f"{schedule!r}: a descriptor is exactly one of {', '.join(_DESCRIPTORS)}, with no white space around it "
            "(@every is not taken here)"
        )
    fields = [field for field in _GO_SPACE.split(text) if field]
    if len(fields) != 5:
        raise ValueError(
            f"a CronJob schedule has exactly five fields: minute hour day-of-month month day-of-week, "
            f"such as '*/5 * * * *' (found {len(fields)})"
        )
    parsed = [_field(f, name, low, high, names) for f, (name, low, high, names) in zip(fields, _FIELDS)]
    (minutes, _), (hours, _), (doms, dom_star), (months, _), (dows, dow_star) = parsed
    spec = CronSpec(
        frozenset(minutes), frozenset(hours), frozenset(doms), frozenset(months), frozenset(dows), dom_star or dow_star
    )
    if longest_gap_minutes(spec) is None:
        raise ValueError(f"{schedule!r} never runs (no minute, hour or day matches)")
    return spec


def longest_gap_minutes(spec: CronSpec) -> int | None:
    """The longest time between two runs, in minutes, over a 28-year span (every weekday and leap-year
    combination); None when the schedule never runs."""
    times = sorted(h * 60 + m for h in spec.hours for m in spec.minutes)
    if not times:
        return None
    if (
        spec.months == set(range(1, 13))
        and spec.any_day
        and len(spec.days_of_month) == 31
        and len(spec.days_of_week) == 7
    ):
        # every day: the gaps within a day, and from the last run to the first of the next day
        gaps = [b - a for a, b in zip(times, times[1:])] + [times[0] + 1440 - times[-1]]
        return max(gaps)
    start = datetime.date(2024, 1, 1)
    days = [start + datetime.timedelta(n) for n in range(28 * 366)]
    run_days = [d.toordinal() for d in days if spec.runs_on(d)]
    if not run_days:
        return None
    within = max([b - a for a, b in zip(times, times[1:])], default=0)
    between = max([(b - a) * 1440 - times[-1] + times[0] for a, b in zip(run_days, run_days[1:])], default=0)
    return max(within, between) or None
