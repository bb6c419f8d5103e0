import argparse
import sys

from .core import top


def main(argv=None):
    parser = argparse.ArgumentParser(prog="wordfreq")
    parser.add_argument("-n", type=int, default=3)
    args = parser.parse_args(argv)
    for word, count in top(sys.stdin.read(), args.n):
        print(f"{count} {word}")
    return 0
