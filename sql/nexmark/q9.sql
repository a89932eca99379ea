-- NEXMark q9 (winning bids): each auction with its highest bid placed while it was open
-- (ties: the earlier bid). Flink writes it with ROW_NUMBER() OVER (PARTITION BY A.id ...),
-- which Spark streaming does not support; the closest Spark SQL form is an aggregation
-- taking the maximum of (price, -time, bidder) per auction. Like q4 it needs a
-- punctuation-aware aggregation for Punctuated's plan (not in this branch).
SELECT id, itemName, initialBid, reserve, auctionDateTime, expires, seller, category,
       winner.price AS price, winner.bidder AS bidder
FROM (
  SELECT A.id, A.itemName, A.initialBid, A.reserve, A.dateTime AS auctionDateTime, A.expires,
         A.seller, A.category,
         MAX(named_struct('price', B.price, 'negTime', -unix_micros(B.dateTime),
                          'bidder', B.bidder)) AS winner
  FROM auction AS A INNER JOIN bid AS B ON A.id = B.auction
    AND B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.itemName, A.initialBid, A.reserve, A.dateTime, A.expires, A.seller, A.category
) AS W
