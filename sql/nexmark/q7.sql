-- NEXMark q7 (highest bid), its windowed aggregation: the highest price (and the number of
-- bids) of each 10-second tumbling window of bids. (The reference query then joins each
-- window's maximum back to its bid rows; that join is not run here.)
-- Reads the temporary view bid (a stream of the `nexmark` source). With the plugin
-- (options punctuations and timePunctuations): the bid stream's `dateTime<=` punctuations
-- close each window in append mode, no watermark; engine "watermark" runs the same SQL over
-- withWatermark("dateTime", "0 seconds") (q7_watermark.sql).
SELECT window.start AS starts, window.end AS ends, max(price) AS maxprice, count(*) AS bids
FROM bid
GROUP BY window(dateTime, '10 seconds')
