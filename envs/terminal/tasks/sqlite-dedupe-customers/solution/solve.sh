#!/bin/sh
set -e
sqlite3 /app/shop.db <<'SQL'
BEGIN;
CREATE TEMP TABLE keep AS
  SELECT lower(trim(email)) AS email, min(id) AS id FROM customers GROUP BY lower(trim(email));
UPDATE orders SET customer_id = (
  SELECT k.id FROM customers c JOIN keep k ON k.email = lower(trim(c.email)) WHERE c.id = orders.customer_id);
DELETE FROM customers WHERE id NOT IN (SELECT id FROM keep);
UPDATE customers SET email = lower(trim(email));
CREATE UNIQUE INDEX customers_email_unique ON customers(email);
COMMIT;
SQL
sqlite3 /app/shop.db 'SELECT count(*) FROM customers; SELECT count(*) FROM orders;'
