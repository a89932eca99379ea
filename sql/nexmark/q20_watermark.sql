-- NEXMark q20 with the best watermark + time-range rewrite Spark allows (engine
-- "watermark"; the views carry withWatermark("dateTime", "0 seconds")). The natural
-- condition `B.dateTime BETWEEN A.dateTime AND A.expires` bounds no state (expires is a
-- column, not a constant offset), so the constant bound is the longest auction the
-- generator makes: {max_auction_ms} ms at the run's eventsPerSecond.
SELECT B.auction, B.bidder, B.price, B.channel, B.url, B.dateTime, B.extra,
       A.itemName, A.description, A.initialBid, A.reserve, A.dateTime AS auctionDateTime,
       A.expires, A.seller, A.category, A.extra AS auctionExtra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
  AND B.dateTime BETWEEN A.dateTime AND A.dateTime + INTERVAL {max_auction_ms} MILLISECONDS
WHERE A.category = 10
