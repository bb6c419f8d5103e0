import argparse
import sys


def build():
    p = argparse.ArgumentParser()
    p.add_argument('--verbose', action='store_true')
    return p


def parse_args(argv=None):
    return build().parse_args(argv)


def main():
    args = parse_args()
    print(args)
