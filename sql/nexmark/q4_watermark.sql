-- NEXMark q4 as close as Spark's watermarks allow (engine "watermark"): the join bounded by
-- the longest auction ({max_auction_ms} ms), the per-auction maximum grouped with the
-- auction's event time (append mode needs an event-time grouping column), the average
-- per category over one event-time window that spans the whole run ({run_ms} ms). Spark
-- emits a window only once the watermark has passed its end, so this query shows which
-- results Spark can finalize at all.
SELECT Q.category, AVG(Q.final) AS avgPrice
FROM (
  SELECT MAX(B.price) AS final, A.category, A.dateTime
  FROM auction AS A INNER JOIN bid AS B ON A.id = B.auction
    AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL {max_auction_ms} MILLISECONDS
    AND B.dateTime <= A.expires
  GROUP BY A.id, A.category, A.dateTime
) AS Q
GROUP BY Q.category, window(Q.dateTime, '{run_ms} milliseconds')
