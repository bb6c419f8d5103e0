"""Split sequences into batches."""


def chunks(seq, n):
    """Consecutive slices of ``seq`` of length ``n`` (the last one may be shorter)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    return [seq[i:i + n] for i in range(0, len(seq) - n + 1, n)]
