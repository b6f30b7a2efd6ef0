-- config/samples/three-queries.yaml: error events per service, with the
-- first and the last of each.
SELECT service, count(*) AS errors, min(ts) AS first_error, max(ts) AS last_error
FROM events
WHERE level = 'ERROR'
GROUP BY service
ORDER BY errors DESC, service
