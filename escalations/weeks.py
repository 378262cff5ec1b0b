"""ISO weeks in the digest's timezone: labels ("2026-W05"), bounds, and which week is due."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class WeekError(ValueError):
    pass


def parse_week(label: str) -> tuple[int, int]:
    match = _WEEK.match(label.strip())
    if not match:
        raise WeekError(f"week {label!r} is not in the form YYYY-Www, e.g. 2026-W05")
    year, week = int(match.group(1)), int(match.group(2))
    try:
        date.fromisocalendar(year, week, 1)
    except ValueError as exc:
        raise WeekError(f"{label}: {year} has no ISO week {week}") from exc
    return year, week


def week_label(moment: datetime, tz: tzinfo) -> str:
    year, week, _ = moment.astimezone(tz).isocalendar()
    return f"{year}-W{week:02d}"


def week_start_local(label: str, tz: tzinfo) -> datetime:
    year, week = parse_week(label)
    return datetime.combine(date.fromisocalendar(year, week, 1), time(0), tzinfo=tz)


def week_bounds(label: str, tz: tzinfo) -> tuple[datetime, datetime]:
    """[Monday 00:00, next Monday 00:00) in the digest's timezone, as UTC instants."""
    start = week_start_local(label, tz)
    end = datetime.combine(start.date() + timedelta(days=7), time(0), tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)


def shift_week(label: str, weeks: int) -> str:
    year, week = parse_week(label)
    y, w, _ = (date.fromisocalendar(year, week, 1) + timedelta(weeks=weeks)).isocalendar()
    return f"{y}-W{w:02d}"


def recent_weeks(label: str, count: int) -> list[str]:
    """`count` week labels ending with `label`, oldest first."""
    return [shift_week(label, -i) for i in range(count - 1, -1, -1)]


def digest_day_index(day: str) -> int:
    """CAIRN_DIGEST_DAY: mon…sun (or 0–6, Monday = 0, as APScheduler counts)."""
    value = day.strip().lower()[:3]
    if value in _DAYS:
        return _DAYS.index(value)
    if value.isdigit() and int(value) < 7:
        return int(value)
    raise WeekError(f"CAIRN_DIGEST_DAY={day!r}: expected one day, mon…sun")


def digest_day_name(day: str) -> str:
    """The day as APScheduler's CronTrigger spells it (mon…sun)."""
    return _DAYS[digest_day_index(day)]


def digest_clock(value: str) -> tuple[int, int]:
    """CAIRN_DIGEST_TIME: HH:MM (24-hour)."""
    match = re.match(r"^(\d{1,2}):(\d{2})$", value.strip())
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise WeekError(f"CAIRN_DIGEST_TIME={value!r}: expected HH:MM, e.g. 09:00")
    return int(match.group(1)), int(match.group(2))


def last_digest_moment(now: datetime, tz: tzinfo, *, day: str, at: str) -> datetime:
    """The latest scheduled digest time at or before `now` (an aware instant)."""
    local = now.astimezone(tz)
    hour, minute = digest_clock(at)
    monday = local.date() - timedelta(days=local.weekday())
    moment = datetime.combine(monday + timedelta(days=digest_day_index(day)), time(hour, minute), tzinfo=tz)
    return moment if moment <= local else moment - timedelta(days=7)


def due_week(now: datetime, tz: tzinfo, *, day: str, at: str) -> tuple[str, datetime]:
    """The week the latest digest covers, and that digest's moment.

    A digest covers the last complete ISO week before its moment: Monday 09:00 posts last week.
    """
    moment = last_digest_moment(now, tz, day=day, at=at)
    return shift_week(week_label(moment, tz), -1), moment
