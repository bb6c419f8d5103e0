"""Word statistics."""


def word_counts(text):
    """How often each whitespace-separated word occurs."""
    counts = {}
    for word in text.split(" "):
        counts[word] = counts.get(word, 0) + 1
    return counts
