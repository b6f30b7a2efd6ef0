-- Custom query 2: line items per part.
SELECT l_partkey, count(*) AS line_count FROM lineitem GROUP BY l_partkey
