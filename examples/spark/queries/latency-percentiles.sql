-- config/samples/three-queries.yaml: the latency histogram of each service,
-- from which its percentiles are read to a bucket's precision (the p99 is
-- the upper bound of the bucket where the running count passes 99% of the
-- requests). An exact percentile does not decompose into batches (the
-- reference job refuses percentile_approx and the like); counts per bucket
-- do, and the largest latency is exact.
SELECT service, le_ms, count(*) AS requests, max(latency_ms) AS max_latency_ms
FROM (
  SELECT service, latency_ms,
    CASE
      WHEN latency_ms <= 5 THEN 5
      WHEN latency_ms <= 10 THEN 10
      WHEN latency_ms <= 25 THEN 25
      WHEN latency_ms <= 50 THEN 50
      WHEN latency_ms <= 100 THEN 100
      WHEN latency_ms <= 250 THEN 250
      WHEN latency_ms <= 500 THEN 500
      WHEN latency_ms <= 1000 THEN 1000
      WHEN latency_ms <= 2500 THEN 2500
      WHEN latency_ms <= 5000 THEN 5000
      ELSE 1000000000
    END AS le_ms
  FROM events
  WHERE latency_ms IS NOT NULL
) AS bucketed
GROUP BY service, le_ms
ORDER BY service, le_ms
