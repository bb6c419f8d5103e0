"""Sum a column of CSV text."""


def column_total(text, column):
    """Sum of the numbers in column ``column`` (named in the header line)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    index = lines[0].split(",").index(column)
    return sum(float(line.split(",")[index]) for line in lines)
