#!/bin/sh
set -e
cat > /app/report.sql <<'SQL'
SELECT strftime('%Y-%m', s.sold_at) AS month,
       p.category AS category,
       SUM(s.quantity * s.unit_price_cents) - COALESCE(SUM(r.refunded), 0) AS net_cents
FROM sales s
JOIN products p ON p.id = s.product_id
LEFT JOIN (SELECT sale_id, SUM(amount_cents) AS refunded FROM refunds GROUP BY sale_id) r ON r.sale_id = s.id
WHERE s.sold_at >= '2025-01-01' AND s.sold_at < '2026-01-01'
GROUP BY month, category
ORDER BY month, category;
SQL
sqlite3 -header /app/sales.db < /app/report.sql | head
