"""The ``sql`` environment's tasks as written: questions and maintenance tasks, and the tables' columns.

Each task names its reference SQL, a wrong trajectory that must not score, and (maintenance) the
checks on the end state and what must stay unchanged. ``build.py`` turns these into ``tasks.jsonl``:
it computes every expected answer, check and guard value by running the SQL on the seed.
"""

from __future__ import annotations

from typing import Any

COLUMNS: dict[str, dict[str, str]] = {
    "departments": {"id": "int", "name": "text", "budget": "money"},
    "employees": {
        "id": "int",
        "first_name": "text",
        "last_name": "text",
        "email": "text",
        "department_id": "int",
        "manager_id": "int",
        "title": "text",
        "salary": "money",
        "hire_date": "date",
    },
    "customers": {
        "id": "int",
        "first_name": "text",
        "last_name": "text",
        "email": "text",
        "city": "text",
        "country": "text",
        "signup_date": "date",
        "tier": "text",
    },
    "products": {"id": "int", "name": "text", "category": "text", "price": "money", "stock": "int", "status": "text"},
    "orders": {
        "id": "int",
        "customer_id": "int",
        "employee_id": "int",
        "order_date": "date",
        "status": "text",
        "shipped_date": "date",
    },
    "order_items": {"id": "int", "order_id": "int", "product_id": "int", "quantity": "int", "unit_price": "money"},
}

LIST = {"name": "list_tables", "arguments": {}}


def describe(table: str) -> dict[str, Any]:
    return {"name": "describe_table", "arguments": {"table": table}}


def query(sql: str) -> dict[str, Any]:
    return {"name": "query", "arguments": {"sql": sql}}


def execute(sql: str) -> dict[str, Any]:
    return {"name": "execute", "arguments": {"sql": sql}}


def Q(
    id: str,
    prompt: str,
    sql: str,
    *,
    ordered: bool = False,
    wrong_sql: str | None = None,
    wrong_answer: Any = None,
    wrong_before: list[dict[str, Any]] | None = None,
    explore: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A question: answered with submit_answer, scored on the answer."""
    return {
        "id": id,
        "kind": "query",
        "prompt": prompt,
        "sql": sql,
        "ordered": ordered,
        "wrong_sql": wrong_sql,
        "wrong_answer": wrong_answer,
        "wrong_before": wrong_before or [],
        "explore": explore or [],
    }


def M(
    id: str,
    prompt: str,
    solution: str,
    *,
    checks: list[Any],
    changes: dict[str, dict[str, Any]],
    wrong: str,
    explore: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A maintenance task: scored on the end state. ``changes`` names, per changed table, the
    rows (``where``) and ``columns`` that must stay as they are."""
    return {
        "id": id,
        "kind": "maintenance",
        "prompt": prompt,
        "solution": solution,
        "checks": checks,
        "changes": changes,
        "wrong": wrong,
        "explore": explore or [],
    }


def _cols(table: str, *drop: str) -> list[str]:
    return [c for c in COLUMNS[table] if c not in drop]


ANSWER_HINT = " Submit it with submit_answer."

TASKS: list[dict[str, Any]] = [
    # ---------------------------------------------------------------- questions
    Q(
        "q01-customer-count",
        "How many customers are there?" + ANSWER_HINT,
        "SELECT COUNT(*) AS customers FROM customers",
        wrong_sql="SELECT COUNT(DISTINCT country) AS customers FROM customers",
        explore=[LIST],
    ),
    Q(
        "q02-cancelled-orders",
        "How many orders have the status 'cancelled'?" + ANSWER_HINT,
        "SELECT COUNT(*) AS cancelled FROM orders WHERE status = 'cancelled'",
        wrong_before=[execute("DELETE FROM order_items WHERE quantity < 0")],
        explore=[describe("orders")],
    ),
    Q(
        "q03-biggest-category",
        "Which product category has the most products? Ignore products without a "
        "category; on a tie give the alphabetically first." + ANSWER_HINT,
        "SELECT category FROM products WHERE category IS NOT NULL GROUP BY category "
        "ORDER BY COUNT(*) DESC, category LIMIT 1",
        wrong_answer="Electronics",
        explore=[describe("products")],
    ),
    Q(
        "q04-delivered-revenue",
        "What is the total revenue of delivered orders (sum of quantity × unit_price "
        "over their order lines), rounded to 2 decimals?" + ANSWER_HINT,
        "SELECT ROUND(SUM(oi.quantity * oi.unit_price), 2) AS revenue FROM order_items oi JOIN orders o ON o.id = oi.order_id "
        "WHERE o.status = 'delivered'",
        wrong_sql="SELECT ROUND(SUM(oi.quantity * oi.unit_price), 2) AS revenue FROM order_items oi",
    ),
    Q(
        "q05-top-customers",
        "List the ids of the 5 customers with the highest total spend (quantity × unit_price) "
        "on delivered orders, highest first (ties: lower id first)." + ANSWER_HINT,
        "SELECT o.customer_id FROM orders o JOIN order_items oi ON oi.order_id = o.id WHERE o.status = 'delivered' "
        "GROUP BY o.customer_id ORDER BY SUM(oi.quantity * oi.unit_price) DESC, o.customer_id LIMIT 5",
        ordered=True,
        wrong_sql="SELECT o.customer_id FROM orders o JOIN order_items oi ON oi.order_id = o.id "
        "GROUP BY o.customer_id ORDER BY COUNT(*) DESC, o.customer_id LIMIT 5",
    ),
    Q(
        "q06-avg-salary",
        "For each department, give its name and the average salary of its employees rounded "
        "to 2 decimals." + ANSWER_HINT,
        "SELECT d.name, ROUND(AVG(e.salary), 2) AS avg_salary FROM departments d JOIN employees e ON e.department_id = d.id "
        "GROUP BY d.id, d.name ORDER BY d.id",
        wrong_sql="SELECT d.name, ROUND(MAX(e.salary), 2) AS avg_salary FROM departments d JOIN employees e "
        "ON e.department_id = d.id GROUP BY d.id, d.name ORDER BY d.id",
        explore=[describe("employees")],
    ),
    Q(
        "q07-largest-budget",
        "Which department has the largest budget? Give its name." + ANSWER_HINT,
        "SELECT name FROM departments ORDER BY budget DESC, id LIMIT 1",
        wrong_sql="SELECT name FROM departments ORDER BY budget, id LIMIT 1",
    ),
    Q(
        "q08-engineering-reports",
        "How many employees report directly to the head of the Engineering department?" + ANSWER_HINT,
        "SELECT COUNT(*) AS reports FROM employees e JOIN employees m ON e.manager_id = m.id JOIN departments d "
        "ON d.id = m.department_id WHERE d.name = 'Engineering'",
        wrong_answer=10,
    ),
    Q(
        "q09-orders-per-year",
        "How many orders were placed in each year? Give rows of (year, number of "
        "orders), year as text like '2023'." + ANSWER_HINT,
        "SELECT SUBSTR(CAST(order_date AS TEXT), 1, 4) AS year, COUNT(*) AS orders FROM orders "
        "GROUP BY SUBSTR(CAST(order_date AS TEXT), 1, 4) ORDER BY 1",
        wrong_sql="SELECT SUBSTR(CAST(order_date AS TEXT), 1, 4) AS year, COUNT(DISTINCT customer_id) AS orders FROM orders "
        "GROUP BY SUBSTR(CAST(order_date AS TEXT), 1, 4) ORDER BY 1",
    ),
    Q(
        "q10-never-ordered",
        "Which products have never been ordered? Give their ids." + ANSWER_HINT,
        "SELECT p.id FROM products p WHERE NOT EXISTS (SELECT 1 FROM order_items oi WHERE oi.product_id = p.id) "
        "ORDER BY p.id",
        wrong_answer=[1, 2, 3],
    ),
    Q(
        "q11-best-seller",
        "Which product sold the most units (sum of positive quantities over all order "
        "lines)? Give its id." + ANSWER_HINT,
        "SELECT product_id FROM order_items WHERE quantity > 0 GROUP BY product_id "
        "ORDER BY SUM(quantity) DESC, product_id LIMIT 1",
        wrong_sql="SELECT product_id FROM order_items GROUP BY product_id ORDER BY COUNT(*), product_id LIMIT 1",
    ),
    Q(
        "q12-german-customers",
        "How many customers live in Germany?" + ANSWER_HINT,
        "SELECT COUNT(*) AS customers FROM customers WHERE country = 'Germany'",
        wrong_sql="SELECT COUNT(*) AS customers FROM customers WHERE city = 'Berlin'",
    ),
    Q(
        "q13-no-sales-rep",
        "How many orders have no sales representative (employee) assigned?" + ANSWER_HINT,
        "SELECT COUNT(*) AS orders FROM orders WHERE employee_id IS NULL",
        wrong_before=[execute("UPDATE orders SET employee_id = NULL")],
    ),
    Q(
        "q14-gold-buyers-2024",
        "How many gold-tier customers placed at least one order in 2024?" + ANSWER_HINT,
        "SELECT COUNT(DISTINCT c.id) AS customers FROM customers c JOIN orders o ON o.customer_id = c.id "
        "WHERE c.tier = 'gold' AND o.order_date >= '2024-01-01' AND o.order_date < '2025-01-01'",
        wrong_sql="SELECT COUNT(*) AS customers FROM customers WHERE tier = 'gold'",
    ),
    Q(
        "q15-lines-per-order",
        "On average, how many order lines does an order have? Round to 2 decimals." + ANSWER_HINT,
        "SELECT ROUND(COUNT(*) * 1.0 / COUNT(DISTINCT order_id), 2) AS lines_per_order FROM order_items",
        wrong_sql="SELECT ROUND(AVG(quantity), 2) AS lines_per_order FROM order_items",
    ),
    Q(
        "q16-busiest-rep",
        "Which employee handled the most orders? Give first and last name (ties: lower employee id)." + ANSWER_HINT,
        "SELECT e.first_name, e.last_name FROM employees e JOIN orders o ON o.employee_id = e.id "
        "GROUP BY e.id, e.first_name, e.last_name ORDER BY COUNT(*) DESC, e.id LIMIT 1",
        wrong_sql="SELECT e.first_name, e.last_name FROM employees e JOIN orders o ON o.employee_id = e.id "
        "GROUP BY e.id, e.first_name, e.last_name ORDER BY COUNT(*), e.id LIMIT 1",
    ),
    Q(
        "q17-best-month",
        "Which month (as 'YYYY-MM') had the highest revenue (quantity × unit_price) from "
        "delivered orders?" + ANSWER_HINT,
        "SELECT SUBSTR(CAST(o.order_date AS TEXT), 1, 7) AS month FROM orders o JOIN order_items oi ON oi.order_id = o.id "
        "WHERE o.status = 'delivered' GROUP BY SUBSTR(CAST(o.order_date AS TEXT), 1, 7) "
        "ORDER BY SUM(oi.quantity * oi.unit_price) DESC, 1 LIMIT 1",
        wrong_answer="2023-01",
    ),
    Q(
        "q18-active-out-of-stock",
        "How many active products are out of stock (stock 0)?" + ANSWER_HINT,
        "SELECT COUNT(*) AS products FROM products WHERE status = 'active' AND stock = 0",
        wrong_sql="SELECT COUNT(*) AS products FROM products WHERE stock < 10",
    ),
    Q(
        "q19-duplicate-emails",
        "Some customers share an e-mail address once case and surrounding spaces are "
        "ignored. List the ids of all customers involved." + ANSWER_HINT,
        "SELECT c.id FROM customers c WHERE (SELECT COUNT(*) FROM customers d "
        "WHERE LOWER(TRIM(d.email)) = LOWER(TRIM(c.email))) > 1 ORDER BY c.id",
        wrong_sql="SELECT c.id FROM customers c WHERE c.email <> LOWER(TRIM(c.email)) ORDER BY c.id",
    ),
    Q(
        "q20-largest-order",
        "Which order has the largest total value (sum of quantity × unit_price of its "
        "lines)? Give its id." + ANSWER_HINT,
        "SELECT order_id FROM order_items GROUP BY order_id ORDER BY SUM(quantity * unit_price) DESC, order_id LIMIT 1",
        wrong_sql="SELECT order_id FROM order_items GROUP BY order_id ORDER BY COUNT(*) DESC, order_id LIMIT 1",
    ),
    # ---------------------------------------------------------------- maintenance
    M(
        "m01-normalize-emails",
        "Clean up customer e-mail addresses: remove surrounding spaces and make them lower case. Change nothing else.",
        "UPDATE customers SET email = LOWER(TRIM(email)) WHERE email <> LOWER(TRIM(email))",
        checks=[
            "SELECT COUNT(*) AS n FROM customers WHERE email <> LOWER(TRIM(email))",
            "SELECT COALESCE(SUM(id * LENGTH(email)), 0) AS email_sum FROM customers",
        ],
        changes={"customers": {"columns": _cols("customers", "email")}},
        wrong="UPDATE customers SET email = LOWER(email)",
        explore=[describe("customers")],
    ),
    M(
        "m02-country-names",
        "The United States is spelled three ways in customers.country ('United States', "
        "'USA', 'US'). Make them all 'United States'.",
        "UPDATE customers SET country = 'United States' WHERE country IN ('USA', 'US')",
        checks=[
            "SELECT COUNT(*) AS n FROM customers WHERE country IN ('USA', 'US')",
            "SELECT COUNT(*) AS n FROM customers WHERE country = 'United States'",
        ],
        changes={
            "customers": [
                {"columns": _cols("customers", "country")},
                {"where": "country NOT IN ('United States', 'USA', 'US')"},
            ]
        },
        wrong="UPDATE customers SET country = 'USA' WHERE country IN ('United States', 'US')",
    ),
    M(
        "m03-shipped-without-date",
        "Some orders have status 'shipped' but no shipped_date. Set the status of exactly those orders to 'pending'.",
        "UPDATE orders SET status = 'pending' WHERE status = 'shipped' AND shipped_date IS NULL",
        checks=[
            "SELECT COUNT(*) AS n FROM orders WHERE status = 'shipped' AND shipped_date IS NULL",
            "SELECT COUNT(*) AS n FROM orders WHERE status = 'pending'",
        ],
        changes={"orders": [{"columns": _cols("orders", "status")}, {"where": "shipped_date IS NOT NULL"}]},
        wrong="UPDATE orders SET status = 'pending' WHERE shipped_date IS NULL",
    ),
    M(
        "m04-negative-quantities",
        "Delete the order lines whose quantity is zero or negative. Keep every other line.",
        "DELETE FROM order_items WHERE quantity <= 0",
        checks=["SELECT COUNT(*) AS n FROM order_items WHERE quantity <= 0"],
        changes={"order_items": {"where": "quantity > 0"}},
        wrong="DELETE FROM order_items WHERE quantity < 3",
        explore=[describe("order_items")],
    ),
    M(
        "m05-zero-prices",
        "Some order lines lost their price (unit_price = 0). Set their unit_price to the "
        "product's current price. Other lines must keep their price.",
        "UPDATE order_items SET unit_price = (SELECT p.price FROM products p WHERE p.id = order_items.product_id) "
        "WHERE unit_price = 0",
        checks=[
            "SELECT COUNT(*) AS n FROM order_items WHERE unit_price = 0",
            "SELECT COUNT(*) AS n FROM order_items oi JOIN products p ON p.id = oi.product_id "
            "WHERE oi.unit_price = p.price",
        ],
        changes={
            "order_items": [
                {"columns": _cols("order_items", "unit_price")},
                {"where": "id NOT IN ({dirty})", "dirty": "SELECT id FROM order_items WHERE unit_price = 0"},
            ]
        },
        wrong="DELETE FROM order_items WHERE unit_price = 0",
    ),
    M(
        "m06-uncategorized",
        "Products without a category should get the category 'Uncategorized'.",
        "UPDATE products SET category = 'Uncategorized' WHERE category IS NULL",
        checks=[
            "SELECT COUNT(*) AS n FROM products WHERE category IS NULL",
            "SELECT COUNT(*) AS n FROM products WHERE category = 'Uncategorized'",
        ],
        changes={"products": [{"columns": _cols("products", "category")}, {"where": "category <> 'Uncategorized'"}]},
        wrong="UPDATE products SET category = 'Uncategorized' WHERE category IS NULL OR status = 'discontinued'",
    ),
    M(
        "m07-unique-employee-email",
        "Add a unique constraint on employees.email (a unique index is fine).",
        "CREATE UNIQUE INDEX ux_employees_email ON employees(email)",
        checks=[{"index": {"table": "employees", "columns": ["email"], "unique": True}}],
        changes={},
        wrong="CREATE INDEX ix_employees_email ON employees(email)",
        explore=[describe("employees")],
    ),
    M(
        "m08-order-date-index",
        "Queries by order date are slow. Create an index on orders(order_date).",
        "CREATE INDEX ix_orders_order_date ON orders(order_date)",
        checks=[{"index": {"table": "orders", "columns": ["order_date"], "unique": False}}],
        changes={},
        wrong="CREATE INDEX ix_orders_status ON orders(status)",
    ),
    M(
        "m09-full-name-column",
        "Migrate employees: add a TEXT column full_name and fill it with first_name, a "
        "space and last_name for every employee.",
        "ALTER TABLE employees ADD COLUMN full_name TEXT; "
        "UPDATE employees SET full_name = first_name || ' ' || last_name",
        checks=["SELECT COUNT(*) AS n FROM employees WHERE full_name = first_name || ' ' || last_name"],
        changes={"employees": {"columns": _cols("employees")}},
        wrong="ALTER TABLE employees ADD COLUMN full_name TEXT; UPDATE employees SET full_name = first_name",
    ),
    M(
        "m10-rename-stock",
        "Rename the column products.stock to units_in_stock, keeping its values.",
        "ALTER TABLE products RENAME COLUMN stock TO units_in_stock",
        checks=["SELECT COALESCE(SUM(id * units_in_stock), 0) AS stock_sum, COUNT(*) AS n FROM products"],
        changes={"products": {"columns": _cols("products", "stock")}},
        wrong="ALTER TABLE products ADD COLUMN units_in_stock INTEGER",
        explore=[describe("products")],
    ),
    M(
        "m11-customer-totals-view",
        "Create a view customer_order_totals with columns customer_id, order_count "
        "and total_spent: per customer, the number of delivered orders and the sum of quantity × unit_price "
        "of their lines. Only customers with delivered orders appear.",
        "CREATE VIEW customer_order_totals AS SELECT o.customer_id AS customer_id, "
        "COUNT(DISTINCT o.id) AS order_count, SUM(oi.quantity * oi.unit_price) AS total_spent "
        "FROM orders o JOIN order_items oi ON oi.order_id = o.id WHERE o.status = 'delivered' "
        "GROUP BY o.customer_id",
        checks=[
            "SELECT COUNT(*) AS n, SUM(order_count) AS orders, ROUND(SUM(total_spent), 2) AS spent FROM customer_order_totals",
            {"object": {"name": "customer_order_totals", "kind": "view"}},
        ],  # a table snapshot is not a view
        changes={},
        wrong="CREATE VIEW customer_order_totals AS SELECT o.customer_id AS customer_id, "
        "COUNT(*) AS order_count, 0 AS total_spent FROM orders o GROUP BY o.customer_id",
    ),
    M(
        "m12-cancel-stale-pending",
        "Pending orders placed before 2024-01-01 are stale: set their status to "
        "'cancelled'. Leave all other orders alone.",
        "UPDATE orders SET status = 'cancelled' WHERE status = 'pending' AND order_date < '2024-01-01'",
        checks=[
            "SELECT COUNT(*) AS n FROM orders WHERE status = 'pending' AND order_date < '2024-01-01'",
            "SELECT COUNT(*) AS n FROM orders WHERE status = 'cancelled'",
        ],
        changes={
            "orders": [
                {"columns": _cols("orders", "status")},
                {"where": "order_date >= '2024-01-01' OR status NOT IN ('pending', 'cancelled')"},
            ]
        },
        wrong="UPDATE orders SET status = 'cancelled' WHERE status = 'pending'",
    ),
    M(
        "m13-support-raise",
        "Give every employee of the Support department a raise of 1500.00 on their "
        "salary. Nobody else's salary changes.",
        "UPDATE employees SET salary = salary + 1500 WHERE department_id = "
        "(SELECT id FROM departments WHERE name = 'Support')",
        checks=[
            "SELECT COALESCE(SUM(CAST(ROUND(salary * 100) AS INTEGER)), 0) AS salary_cents FROM employees "
            "WHERE department_id = (SELECT id FROM departments WHERE name = 'Support')"
        ],
        changes={
            "employees": [
                {"columns": _cols("employees", "salary")},
                {"where": "department_id <> (SELECT id FROM departments WHERE name = 'Support')"},
            ]
        },
        wrong="UPDATE employees SET salary = salary + 1500",
    ),
    M(
        "m14-drop-dead-products",
        "Delete the discontinued products that were never ordered. Discontinued "
        "products that appear in orders must stay.",
        "DELETE FROM products WHERE status = 'discontinued' AND id NOT IN (SELECT product_id FROM order_items)",
        checks=[
            "SELECT COUNT(*) AS n FROM products p WHERE p.status = 'discontinued' AND NOT EXISTS "
            "(SELECT 1 FROM order_items oi WHERE oi.product_id = p.id)"
        ],
        changes={"products": {"where": "status <> 'discontinued' OR id IN (SELECT product_id FROM order_items)"}},
        wrong="DELETE FROM products WHERE status = 'discontinued'",
    ),
    M(
        "m15-tier-discount",
        "Migrate customers: add an INTEGER column discount_pct, NOT NULL with default 0, "
        "then set it to 10 for gold and 5 for silver customers.",
        "ALTER TABLE customers ADD COLUMN discount_pct INTEGER NOT NULL DEFAULT 0; "
        "UPDATE customers SET discount_pct = 10 WHERE tier = 'gold'; "
        "UPDATE customers SET discount_pct = 5 WHERE tier = 'silver'",
        checks=[
            "SELECT tier, MIN(discount_pct) AS lo, MAX(discount_pct) AS hi, COUNT(*) AS n FROM customers GROUP BY tier "
            "ORDER BY tier"
        ],
        changes={"customers": {"columns": _cols("customers")}},
        wrong="ALTER TABLE customers ADD COLUMN discount_pct INTEGER NOT NULL DEFAULT 0; "
        "UPDATE customers SET discount_pct = 10 WHERE tier <> 'standard'",
        explore=[describe("customers")],
    ),
    M(
        "m16-new-department",
        "Create a new department named 'Research' with a budget of 600000.50 (let the "
        "database assign its id), and move the employee with id 25 into it.",
        "INSERT INTO departments (name, budget) VALUES ('Research', 600000.50); "
        "UPDATE employees SET department_id = (SELECT id FROM departments WHERE name = 'Research') WHERE id = 25",
        checks=[
            "SELECT id, name, budget FROM departments WHERE name = 'Research'",
            "SELECT d.name FROM employees e JOIN departments d ON d.id = e.department_id WHERE e.id = 25",
        ],
        changes={
            "departments": {"where": "name <> 'Research'"},
            "employees": [{"columns": _cols("employees", "department_id")}, {"where": "id <> 25"}],
        },
        wrong="INSERT INTO departments (name, budget) VALUES ('Research', 600000.50); "
        "UPDATE employees SET department_id = (SELECT id FROM departments WHERE name = 'Research') "
        "WHERE department_id = 3",
    ),
]
