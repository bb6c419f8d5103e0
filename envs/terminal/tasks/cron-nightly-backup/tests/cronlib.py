"""A strict reader of cron schedules (the five time fields of crontab(5), Debian's cron)."""

RANGES = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
NAMES = [
    None,
    None,
    None,
    {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())},
    {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())},
]
MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}


def field_values(text, index):
    """The set of values one field matches; ValueError when it is not valid cron."""
    low, high = RANGES[index]
    names = NAMES[index] or {}
    out = set()
    for part in text.lower().split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            step = int(step_text)
            if step < 1:
                raise ValueError(part)
        if part == "*":
            start, end = low, high
        elif "-" in part:
            a, b = part.split("-", 1)
            start, end = int(names.get(a, a)), int(names.get(b, b))
        else:
            start = int(names.get(part, part))
            end = high if "/" in text else start
        if not (low <= start <= high and low <= end <= high and start <= end):
            raise ValueError(part)
        out.update(range(start, end + 1, step))
    if index == 4 and 7 in out:
        out = (out - {7}) | {0}
    return out


def schedule(fields):
    """The five fields as sets of values (a macro expanded); ValueError when invalid."""
    if len(fields) == 1 and fields[0] in MACROS:
        fields = MACROS[fields[0]].split()
    if len(fields) != 5:
        raise ValueError("expected five time fields")
    return [field_values(f, i) for i, f in enumerate(fields)]


def entries(text, with_user):
    """(schedule, user, command) of every job line; environment lines and comments skipped."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head = line.split(None, 1)[0]
        if "=" in head and not head.startswith("@"):
            continue  # NAME=value
        count = 1 if line.startswith("@") else 5
        parts = line.split(None, count + (1 if with_user else 0))
        if len(parts) < count + (2 if with_user else 1):
            raise ValueError(f"incomplete line: {line}")
        sched = schedule(parts[:count])
        user = parts[count] if with_user else None
        out.append((sched, user, parts[-1]))
    return out
