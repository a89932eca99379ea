-- NEXMark q20 (expand bid with auction), Flink/RisingWave nexmark version: bids joined with
-- their auction, auctions of category 10 only. Bid JOIN Auction on auction = id.
-- Reads the temporary views bid and auction (streams of the `nexmark` source).
-- With the plugin (option("punctuations", "true")): bids punctuate an auction once it
-- has expired, auction ids are unique; without: Spark's own join, state grows forever.
SELECT B.auction, B.bidder, B.price, B.channel, B.url, B.dateTime, B.extra,
       A.itemName, A.description, A.initialBid, A.reserve, A.dateTime AS auctionDateTime,
       A.expires, A.seller, A.category, A.extra AS auctionExtra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10
