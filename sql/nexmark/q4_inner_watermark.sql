-- NEXMark q4's inner query (variant "q4_inner") as close as Spark's watermarks allow (engine
-- "watermark"): the join bounded by the longest auction ({max_auction_ms} ms), the
-- per-auction maximum grouped with the auction's event time too, so that append mode can
-- emit each auction once the watermark has passed it.
SELECT A.id, A.category, MAX(B.price) AS final
FROM auction AS A INNER JOIN bid AS B ON A.id = B.auction
  AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL {max_auction_ms} MILLISECONDS
  AND B.dateTime <= A.expires
GROUP BY A.id, A.category, A.dateTime
