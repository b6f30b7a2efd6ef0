-- config/samples/objectstore.yaml: page views per path in the window, with
-- the first and last view of each.
SELECT path, count(*) AS views, min(ts) AS first_view, max(ts) AS last_view
FROM pageviews
GROUP BY path
ORDER BY views DESC, path
