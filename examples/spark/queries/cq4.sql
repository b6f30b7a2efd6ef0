-- Custom query 4: orders per priority.
SELECT o_orderpriority, count(*) AS order_count FROM orders GROUP BY o_orderpriority
