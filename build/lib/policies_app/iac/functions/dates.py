"""Date and time functions: formatdate timeadd timecmp timestamp plantimestamp.

Timestamps are RFC 3339 strings, as everywhere in Terraform. ``timestamp()`` and ``plantimestamp()``
depend on when terraform runs, so a static evaluation can only say "known after apply".
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from policies_app.iac.functions.base import ArgumentError, register, want_string
from policies_app.iac.values import UNKNOWN

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:(Z)|([+-])(\d{2}):(\d{2}))")


def parse_timestamp(text: str) -> datetime:
    match = _RFC3339.fullmatch(text)
    if not match:
        raise ArgumentError(f'not a valid RFC3339 timestamp: "{text}"')
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    micro = int((match.group(7) or ".0")[1:].ljust(6, "0")[:6])
    if match.group(8):
        tz = UTC
    else:
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        tz = timezone(-offset if match.group(9) == "-" else offset)
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError as exc:
        raise ArgumentError(f'not a valid RFC3339 timestamp: "{text}": {exc}') from None


def _offset(moment: datetime, colon: bool) -> str:
    total = int(moment.utcoffset().total_seconds()) // 60  # type: ignore[union-attr]
    sign = "-" if total < 0 else "+"
    hours, minutes = divmod(abs(total), 60)
    return f"{sign}{hours:02d}{':' if colon else ''}{minutes:02d}"


def format_rfc3339(moment: datetime) -> str:
    zone = "Z" if moment.utcoffset() == timedelta(0) else _offset(moment, colon=True)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}{zone}"
    )


@register("timestamp", 0)
def timestamp() -> Any:
    return UNKNOWN


@register("plantimestamp", 0)
def plantimestamp() -> Any:
    return UNKNOWN


_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "μs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}


def parse_duration(text: str) -> timedelta:
    """Go's time.ParseDuration: "1h30m", "-10m", "1.5h", "300ms"."""
    body = text
    negative = body.startswith("-")
    if body[:1] in "+-" and body:
        body = body[1:]
    if body == "0":
        return timedelta(0)
    position = 0
    seconds = Decimal(0)
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if not match or match.group(1) in ("", "."):
            raise ArgumentError(f'invalid duration "{text}"')
        seconds += Decimal(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if not body:
        raise ArgumentError(f'invalid duration "{text}"')
    delta = timedelta(seconds=float(seconds))
    return -delta if negative else delta


@register("timeadd", 2)
def timeadd(moment: Any, duration: Any) -> str:
    start = parse_timestamp(want_string(moment))
    return format_rfc3339(start + parse_duration(want_string(duration)))


@register("timecmp", 2)
def timecmp(a: Any, b: Any) -> int:
    first, second = parse_timestamp(want_string(a)), parse_timestamp(want_string(b))
    return (first > second) - (first < second)


_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_FORMAT_TOKEN = re.compile(r"'(?:[^']|'')*'|'|([A-Za-z])\1*|[^A-Za-z']+")


def _verb(token: str, moment: datetime) -> str:
    hour12 = moment.hour % 12 or 12
    offset_zero = moment.utcoffset() == timedelta(0)
    verbs = {
        "YYYY": f"{moment.year:04d}",
        "YY": f"{moment.year % 100:02d}",
        "MMMM": _MONTHS[moment.month - 1],
        "MMM": _MONTHS[moment.month - 1][:3],
        "MM": f"{moment.month:02d}",
        "M": str(moment.month),
        "DD": f"{moment.day:02d}",
        "D": str(moment.day),
        "EEEE": _DAYS[moment.weekday()],
        "EEE": _DAYS[moment.weekday()][:3],
        "hh": f"{moment.hour:02d}",
        "h": str(moment.hour),
        "HH": f"{hour12:02d}",
        "H": str(hour12),
        "AA": "AM" if moment.hour < 12 else "PM",
        "aa": "am" if moment.hour < 12 else "pm",
        "mm": f"{moment.minute:02d}",
        "m": str(moment.minute),
        "ss": f"{moment.second:02d}",
        "s": str(moment.second),
        "ZZZZZ": _offset(moment, colon=True),
        "ZZZZ": _offset(moment, colon=False),
        "ZZZ": "UTC" if offset_zero else _offset(moment, colon=False),
        "Z": "Z" if offset_zero else _offset(moment, colon=True),
    }
    if token not in verbs:
        raise ArgumentError(f'invalid date format verb "{token}"')
    return verbs[token]


@register("formatdate", 2)
def formatdate(spec: Any, moment: Any) -> str:
    template, when = want_string(spec, "the format"), parse_timestamp(want_string(moment, "the timestamp"))
    out: list[str] = []
    for match in _FORMAT_TOKEN.finditer(template):
        token = match.group(0)
        if token.startswith("'"):
            if token == "'":
                raise ArgumentError("unterminated literal in the date format")
            out.append("'" if token == "''" else token[1:-1].replace("''", "'"))
        elif match.group(1):
            out.append(_verb(token, when))
        else:
            out.append(token)
    return "".join(out)
