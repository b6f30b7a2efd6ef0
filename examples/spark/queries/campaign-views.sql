-- config/samples/yahoo.yaml: the Yahoo streaming benchmark's query over the
-- whole window: ad views per campaign, each event joined with the static
-- ad-to-campaign table (exact per batch: the table does not change).
SELECT campaign_id, count(*) AS views
FROM (
  SELECT c.campaign_id AS campaign_id
  FROM ad_events e JOIN campaigns c ON e.ad_id = c.ad_id
  WHERE e.event_type = 'view'
) AS viewed
GROUP BY campaign_id
ORDER BY views DESC, campaign_id
