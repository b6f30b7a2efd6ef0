-- config/samples/kafka.yaml: sessions started, and clicks, per country.
SELECT
  country,
  sum(CASE WHEN session_start THEN 1 ELSE 0 END) AS sessions,
  count(*) AS clicks
FROM clicks
GROUP BY country
ORDER BY sessions DESC, country
