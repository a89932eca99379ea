-- NEXMark q3 (local item suggestion): auctions of category 10 by sellers in Oregon, Idaho
-- or California. Auction JOIN Person on seller = id (Flink/RisingWave nexmark version).
-- Reads the temporary views person, auction, bid (streams of the `nexmark` source, see
-- docs/nexmark.md); run it with `python -m benchmarks.nexmark --query q3`.
-- With the plugin and the auction stream's seller punctuations
-- (option("sellerPunctuations", "true")) both join inputs are purged; without them this is
-- Spark's own stream-stream join, whose state grows with every event.
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')
