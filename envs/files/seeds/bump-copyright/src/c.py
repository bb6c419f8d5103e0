# Copyright 2023 Example Corp.

C = 3
