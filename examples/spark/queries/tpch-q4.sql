-- TPC-H Q4, order priority checking: orders with a late line item, by
-- priority (DATE = 1993-07-01). The EXISTS joins an order with its own line
-- items, which arrive in the same batch.
SELECT
  o_orderpriority,
  count(*) AS order_count
FROM orders
WHERE o_orderdate >= '1993-07-01'
  AND o_orderdate < '1993-10-01'
  AND EXISTS (
    SELECT * FROM lineitem
    WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate
  )
GROUP BY o_orderpriority
ORDER BY o_orderpriority
