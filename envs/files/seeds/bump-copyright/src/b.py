# Copyright 2023 Example Corp.

B = 2  # since 2023
