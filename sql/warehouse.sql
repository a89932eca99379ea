-- The warehouse query (Tucker et al. 2003, the running example): temperature sensors in two
-- halls report readings; punctuations on the hour ("no more readings for hours <= h") let the
-- maximum temperature of each hour come out as soon as both halls have closed that hour --
-- append mode, no watermark, and no state left for closed hours.
-- Run it: .venv/bin/punctuated run-sql sql/warehouse.sql

-- `hour<=` is a range scheme: one punctuation row closes every hour up to its value.
CREATE TABLE IF NOT EXISTS hall_a (sensor BIGINT, hour INT, temp DOUBLE, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.schemes' = 'hour<=', 'punctuated.marker' = 'is_punct');

CREATE TABLE IF NOT EXISTS hall_b (sensor BIGINT, hour INT, temp DOUBLE, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.schemes' = 'hour<=', 'punctuated.marker' = 'is_punct');

INSERT INTO hall_a VALUES
  (1, 9, 20.5, false), (2, 9, 21.0, false), (1, 10, 22.5, false),
  (NULL, 10, NULL, true);           -- hall a: no more readings for hours <= 10

INSERT INTO hall_b VALUES
  (7, 9, 24.0, false), (7, 10, 19.5, false), (8, 11, 23.0, false),
  (NULL, 9, NULL, true);            -- hall b: no more readings for hours <= 9

-- A union's punctuation holds where every input punctuated (setCombine): hours <= 9 are
-- closed, so hour 9 comes out with its maximum (24.0); hours 10 and 11 wait in state.
SELECT hour, max(temp) AS max_temp, count(*) AS readings
FROM (SELECT sensor, hour, temp, is_punct FROM STREAM(hall_a)
      UNION ALL
      SELECT sensor, hour, temp, is_punct FROM STREAM(hall_b))
GROUP BY hour;
