-- NEXMark q9 as close as Spark's watermarks allow (engine "watermark"): the join bounded by
-- the longest auction ({max_auction_ms} ms); the aggregation groups by the auction's event
-- time too, so that append mode can emit each auction once the watermark has passed it.
SELECT id, itemName, initialBid, reserve, auctionDateTime, expires, seller, category,
       winner.price AS price, winner.bidder AS bidder
FROM (
  SELECT A.id, A.itemName, A.initialBid, A.reserve, A.dateTime AS auctionDateTime, A.expires,
         A.seller, A.category,
         MAX(named_struct('price', B.price, 'negTime', -unix_micros(B.dateTime),
                          'bidder', B.bidder)) AS winner
  FROM auction AS A INNER JOIN bid AS B ON A.id = B.auction
    AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL {max_auction_ms} MILLISECONDS
    AND B.dateTime <= A.expires
  GROUP BY A.id, A.itemName, A.initialBid, A.reserve, A.dateTime, A.expires, A.seller, A.category
) AS W
