import re
from importlib import resources

WORD = re.compile(r"[a-z']+")


def stop_words():
    text = resources.files("wordfreq").joinpath("data/stopwords.txt").read_text()
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


def top(text, n=3):
    skip = stop_words()
    counts = {}
    for word in WORD.findall(text.lower()):
        if word not in skip:
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
