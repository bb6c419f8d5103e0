#!/bin/sh
set -e
sqlite3 /app/contacts.db <<'SQL'
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE contacts_v2 (id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT, phone TEXT,
                          created TEXT NOT NULL, updated TEXT NOT NULL);
INSERT INTO contacts_v2 (id, first_name, last_name, phone, created, updated)
  SELECT id,
         CASE WHEN instr(full_name, ' ') > 0 THEN substr(full_name, 1, instr(full_name, ' ') - 1) ELSE full_name END,
         CASE WHEN instr(full_name, ' ') > 0 THEN substr(full_name, instr(full_name, ' ') + 1) ELSE NULL END,
         NULLIF(phone, ''), created, created
  FROM contacts;
DROP TABLE contacts;
ALTER TABLE contacts_v2 RENAME TO contacts;
CREATE INDEX contacts_last_name ON contacts(last_name);
PRAGMA user_version = 2;
COMMIT;
SQL
sqlite3 /app/contacts.db 'PRAGMA user_version; SELECT * FROM contacts LIMIT 3;'
