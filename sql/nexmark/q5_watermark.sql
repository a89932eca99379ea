-- NEXMark q5 with Spark's watermark (engine "watermark": the view carries
-- withWatermark("dateTime", "0 seconds")): the same SQL as q5.sql, two chained aggregations
-- in append mode, each window emitted once the watermark passes its end.
SELECT window.start AS starts, window.end AS ends, max(bids) AS maxbids
FROM (SELECT auction, window, count(*) AS bids
      FROM bid
      GROUP BY auction, window(dateTime, '10 seconds', '2 seconds'))
GROUP BY window
