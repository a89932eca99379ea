-- The auction query (Li et al. 2006, §1; Tucker et al. 2003, Example 2): each auction's bids, total and final
-- price, emitted once, when the auction closes -- append mode, no watermark.
-- Run it: .venv/bin/punctuated run-sql sql/auction.sql
-- The main job runs the same query over a generated stream, side by side with Spark's
-- own plan: .venv/bin/punctuated demo (see python/punctuated/demo.py).

-- Auction ids are unique: every auction row implies "no more auctions with this id".
CREATE TABLE IF NOT EXISTS auctions (id BIGINT, seller BIGINT, category INT, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct');

-- A bid punctuation (is_punct = true, every other column NULL) closes an auction:
-- "no more bids for auction a".
CREATE TABLE IF NOT EXISTS bids (auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct');

INSERT INTO auctions VALUES (1, 10, 3, false), (2, 11, 3, false), (3, 12, 5, false);

INSERT INTO bids VALUES
  (1, 100, 5.0, false), (1, 101, 7.5, false), (2, 100, 3.0, false),
  (1, NULL, NULL, true),            -- auction 1 closed
  (3, 102, 9.0, false), (3, 103, 12.0, false),
  (3, NULL, NULL, true);            -- auction 3 closed; auction 2 is still open

-- Auctions 1 and 3 come out with their final totals and their state is dropped;
-- auction 2 stays in state, with no row yet, until its bids close it.
SELECT a.id AS auction, a.category, count(*) AS bids, sum(b.price) AS total, max(b.price) AS final_price
FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction
GROUP BY a.id, a.category;
