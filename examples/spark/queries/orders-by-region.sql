-- config/samples/recurring.yaml: orders and revenue per region in each
-- window.
SELECT region, count(*) AS orders, sum(amount) AS revenue
FROM orders
GROUP BY region
ORDER BY revenue DESC, region
