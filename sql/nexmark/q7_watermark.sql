-- NEXMark q7 with Spark's watermark (engine "watermark": the view carries
-- withWatermark("dateTime", "0 seconds"); the bid stream's times never decrease): the same
-- SQL as q7.sql, each window emitted once the watermark passes its end.
SELECT window.start AS starts, window.end AS ends, max(price) AS maxprice, count(*) AS bids
FROM bid
GROUP BY window(dateTime, '10 seconds')
