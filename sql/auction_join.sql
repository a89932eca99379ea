-- A streaming join over two catalog tables that declare punctuation schemes.
-- Run it: .venv/bin/punctuated run-sql sql/auction_join.sql
-- (statements run in order; a query that reads STREAM(...) runs as a streaming query
-- over everything available and prints its results.)

-- Auction ids are unique: every auction row implies "no more auctions with this id".
CREATE TABLE IF NOT EXISTS auctions (id BIGINT, seller BIGINT, category INT, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct');

-- Bids carry punctuations "no more bids for auction a" (is_punct = true, other columns NULL).
CREATE TABLE IF NOT EXISTS bids (auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct');

INSERT INTO auctions VALUES (1, 10, 3, false), (2, 11, 3, false), (3, 12, 5, false);

INSERT INTO bids VALUES
  (1, 100, 5.0, false), (1, 101, 7.5, false), (2, 100, 3.0, false),
  (1, NULL, NULL, true),            -- auction 1 is closed: no more bids for it
  (3, 102, 9.0, false);

-- Runs with the punctuation-purging join: punctuation rows never reach the results, and
-- auction 1's state is dropped as soon as the bids close it.
SELECT a.id AS auction, a.seller, b.bidder, b.price
FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction;
