# Copyright 2023 Example Corp.

A = 1
