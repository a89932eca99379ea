-- A join on time alone: clicks within 10 minutes after an impression, no key in common.
-- Run it: .venv/bin/punctuated run-sql sql/band_only_join.sql
-- It runs as an equi-join on time buckets (docs/joins.md, "Band-only joins"); each input's
-- range punctuations on ts ("no more rows at or before this time") purge the other's rows.

CREATE TABLE IF NOT EXISTS impressions (ad BIGINT, ts TIMESTAMP, p BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.schemes' = 'ts<=', 'punctuated.marker' = 'p');

CREATE TABLE IF NOT EXISTS clicks (user BIGINT, ts TIMESTAMP, p BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.schemes' = 'ts<=', 'punctuated.marker' = 'p');

INSERT INTO impressions VALUES
  (1, TIMESTAMP '2026-01-01 12:00:00', false),
  (2, TIMESTAMP '2026-01-01 12:05:00', false),
  (3, TIMESTAMP '2026-01-01 12:30:00', false),
  (NULL, TIMESTAMP '2026-01-01 12:30:00', true);   -- no more impressions at or before 12:30

INSERT INTO clicks VALUES
  (100, TIMESTAMP '2026-01-01 12:03:00', false),
  (101, TIMESTAMP '2026-01-01 12:12:00', false),
  (102, TIMESTAMP '2026-01-01 12:50:00', false),
  (NULL, TIMESTAMP '2026-01-01 12:20:00', true);   -- no more clicks at or before 12:20

-- Results: (1, 100) and (2, 101). Left in state: impression 3 (its band [12:30, 12:40] is
-- still open; held in one or two buckets) and click 102 (12:50 may still meet an impression
-- after 12:40); the others were purged by the punctuations.
SELECT i.ad, c.user
FROM STREAM(impressions) i JOIN STREAM(clicks) c
  ON c.ts BETWEEN i.ts AND i.ts + INTERVAL 10 MINUTES;
