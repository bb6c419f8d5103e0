#!/bin/sh
# The verifier: check.py writes /logs/verifier/reward.json ({"reward": ...}).
exec python3 -I -S /tests/check.py
