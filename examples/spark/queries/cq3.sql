-- Custom query 3: line items per supplier.
SELECT l_suppkey, count(*) AS line_count FROM lineitem GROUP BY l_suppkey
