-- NEXMark q9 (winning bids): each auction with its highest bid placed while it was open
-- (ties: the earlier bid). Flink writes it with ROW_NUMBER() OVER (PARTITION BY A.id ...),
-- which Spark streaming does not support; the closest Spark SQL form is an aggregation
-- taking the maximum of (price, -time, bidder) per auction (deviation: a tie on price and
-- time goes to the larger bidder id, where ROW_NUMBER's order would be arbitrary).
-- Spark's own engine runs it only in update mode (no final rows); Punctuated's plan runs it
-- in append mode without a watermark: the aggregation's groups are closed by the join's
-- output punctuations on A.id (the auction's unique id, and the bid stream's "no more bids
-- for auction a" after its expiry), so each auction's winning bid is emitted once, final,
-- in the micro-batch where its auction closes, and its state is purged.
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
