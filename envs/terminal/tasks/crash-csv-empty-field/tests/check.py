"""crash-csv-empty-field: csvsum, rebuilt from the agent's source as nobody, sums correctly."""

import os
import sys

sys.path.insert(0, "/tests")
from harness import Checks, copy_for_nobody, run_as_nobody  # noqa: E402

checks = Checks()
work = copy_for_nobody("/app/csvsum")
for name in ("csvsum",):
    if os.path.lexists(os.path.join(work, name)):
        os.unlink(os.path.join(work, name))
code, _, err = run_as_nobody(["gcc", "-O1", "-Wall", "-o", "csvsum", "csvsum.c"], cwd=work, timeout=120)
checks.guard("csvsum.c compiles", code == 0)
cases = {
    "sample": (
        "id,name,amount,note\n1,apple,2.50,fresh\n2,pear,,\n3,,4.25,bruised\n4,plum,1.25,\n",
        "amount",
        "rows=4 sum=8.00",
    ),
    "leading-empty": ("a,b,c\n,1,2\n,,3\n4,,\n", "c", "rows=3 sum=5.00"),
    "short-rows": ("x,y,z\n1\n2,3\n4,5,6\n", "z", "rows=3 sum=6.00"),
    "crlf": ("x,total\r\n1,10.5\r\n2,\r\n3,0.25\r\n", "total", "rows=3 sum=10.75"),
    "middle-empty": ("p,q,r\n1,,3\n,2,\n4,5,6\n", "r", "rows=3 sum=9.00"),
    "sparse": ("a,b\n5,\n,7\n", "b", "rows=2 sum=7.00"),
    "wide": ("," * 40 + "last\n" + "1," * 40 + "9\n" + "," * 40 + "\n", "last", "rows=2 sum=9.00"),
}
binary = os.path.join(work, "csvsum")
for name, (text, column, want) in cases.items():
    path = os.path.join(work, f"case-{name}.csv")
    with open(path, "w") as out:
        out.write(text)
    os.chown(path, 65534, 65534)
    ok = False
    if os.path.isfile(binary):
        code, out, _ = run_as_nobody([binary, path, column], cwd=work, timeout=10)
        ok = code == 0 and out.strip() == want
    checks.goal(f"{name}: prints {want}", ok)
code, _, _ = (
    run_as_nobody([binary, os.path.join(work, "case-sample.csv"), "nope"], cwd=work, timeout=10)
    if os.path.isfile(binary)
    else (None, "", "")
)
checks.guard("an unknown column still fails cleanly (exit 1)", code == 1)
checks.finish()
