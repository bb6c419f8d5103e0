"""sqlite-schema-migration: version 2's schema and data, from a read-only copy of the agent's db."""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, "/tests")
from harness import Checks  # noqa: E402

checks = Checks()
work = tempfile.mkdtemp()
subprocess.run([sys.executable, "-I", "-S", "/tests/gen.py", os.path.join(work, "v1.db")], check=True)
v1 = sqlite3.connect(os.path.join(work, "v1.db"))
want = {}
for cid, full, phone, created in v1.execute("SELECT id, full_name, phone, created FROM contacts"):
    first, _, last = full.partition(" ")
    want[cid] = (first, last or None, phone or None, created, created)
want_notes = sorted(v1.execute("SELECT id, contact_id, body FROM notes"))
copy = os.path.join(work, "agent.db")
db = None
if os.path.isfile("/app/contacts.db") and not os.path.islink("/app/contacts.db"):
    shutil.copyfile("/app/contacts.db", copy)
    for suffix in ("-wal", "-shm"):
        if os.path.isfile("/app/contacts.db" + suffix):
            shutil.copyfile("/app/contacts.db" + suffix, copy + suffix)
    db = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)


def q(sql, default=None):
    try:
        return db.execute(sql).fetchall() if db else default
    except sqlite3.Error:
        return default


columns = {row[1]: row for row in q("PRAGMA table_info(contacts)", [])}
checks.guard("notes are unchanged", sorted(q("SELECT id, contact_id, body FROM notes", [])) == want_notes)
checks.guard("no contact is lost", sorted(r[0] for r in q("SELECT id FROM contacts", [])) == sorted(want))
checks.goal("user_version is 2", q("PRAGMA user_version", [[None]])[0][0] == 2)
checks.goal("full_name is gone", columns and "full_name" not in columns)
checks.goal(
    "first_name TEXT NOT NULL and last_name TEXT",
    "first_name" in columns
    and columns["first_name"][2].upper() == "TEXT"
    and columns["first_name"][3] == 1
    and "last_name" in columns
    and columns["last_name"][2].upper() == "TEXT",
)
checks.goal("updated TEXT NOT NULL", "updated" in columns and columns["updated"][3] == 1)
rows = (
    {r[0]: tuple(r[1:]) for r in q("SELECT id, first_name, last_name, phone, created, updated FROM contacts", [])}
    if {"first_name", "last_name", "updated"} <= set(columns)
    else {}
)
checks.goal("names are split, empty phones are NULL, updated = created", rows == want)
index = [r for r in q("PRAGMA index_list(contacts)", []) if r[1] == "contacts_last_name"]
checks.goal(
    "an index contacts_last_name on last_name",
    bool(index) and [r[2] for r in q("PRAGMA index_info(contacts_last_name)", [])] == ["last_name"],
)
checks.goal(
    "notes still reference existing contacts",
    db is not None
    and q("SELECT count(*) FROM notes WHERE contact_id NOT IN (SELECT id FROM contacts)", [[1]])[0][0] == 0
    and "first_name" in columns,
)
checks.finish()
