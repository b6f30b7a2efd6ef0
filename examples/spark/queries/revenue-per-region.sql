-- config/samples/emr-on-eks.yaml: revenue per region in the window, in the
-- currency of the amounts, with the average order.
SELECT region, sum(amount) AS revenue, avg(amount) AS average_order, count(*) AS orders
FROM orders
GROUP BY region
ORDER BY revenue DESC, region
