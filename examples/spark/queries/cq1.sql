-- Custom query 1: the window's orders.
SELECT count(*) AS order_count FROM orders
