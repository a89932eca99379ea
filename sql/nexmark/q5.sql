-- NEXMark q5 (hot items): per sliding window (10 seconds, every 2 seconds), the most bids any
-- one auction got — bids counted per auction and window, then the maximum per window (two
-- chained aggregations; the reference query then picks the auctions with that count: not
-- run here). Reads the temporary view bid (a stream of the `nexmark` source).
-- With the plugin (options punctuations and timePunctuations): an auction's windows close
-- when its auction is punctuated or when `dateTime<=` passes their end, each window's maximum
-- when `dateTime<=` passes its end, in append mode with no watermark; engine "watermark" runs
-- the same SQL over withWatermark("dateTime", "0 seconds") (q5_watermark.sql).
SELECT window.start AS starts, window.end AS ends, max(bids) AS maxbids
FROM (SELECT auction, window, count(*) AS bids
      FROM bid
      GROUP BY auction, window(dateTime, '10 seconds', '2 seconds'))
GROUP BY window
