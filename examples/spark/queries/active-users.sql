-- config/samples/three-queries.yaml: the users active in the window, each
-- once, with their events and their first and last; the number of rows is
-- the number of active users, exactly. count(DISTINCT user_id) itself does
-- not decompose (the users of different batches overlap, and the reference
-- job refuses it); grouping by the user does.
SELECT user_id, count(*) AS events, min(ts) AS first_seen, max(ts) AS last_seen
FROM events
WHERE user_id IS NOT NULL
GROUP BY user_id
ORDER BY user_id
