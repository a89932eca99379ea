-- Safety check of a 3-way streaming join (Li et al., VLDB 2006, §4: Theorems 2 and 4).
-- Run it from the repository root:
--
--   .venv/bin/punctuated check --setup sql/safety_check.sql --draw safety.png --sql \
--     "SELECT * FROM STREAM(people) p JOIN STREAM(auctions) a ON p.pid = a.seller
--      JOIN STREAM(bids) b ON a.id = b.auction"
--
-- It prints NOT SAFE (exit code 1): no stream punctuates people, and auctions never say
-- "no more auctions of seller s", so people tuples, and the auctions and bids waiting for
-- a person, would be kept forever. The three streams run as one multi-way join (the
-- default, spark.punctuated.join.plan=auto), judged as one (Theorem 2): the report prints
-- the declarations that make it safe (a scheme on auctions' seller and one on people's pid,
-- as ALTER TABLE statements). With spark.punctuated.join.plan=written Spark's tree of binary
-- joins runs instead, ((people ⋈ auctions) ⋈ bids): the lower join passes on punctuations of
-- its key (seller) only, never of auctions' id, so no declaration makes bids' state
-- purgeable there, and the check says so.
-- What works without declaring people: join it, as it closes no key, as a static table, after the
-- stream-stream join (a stream-static join keeps no state). SAFE (exit code 0):
--
--   .venv/bin/punctuated check --setup sql/safety_check.sql --sql \
--     "SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction
--      JOIN people p ON p.pid = a.seller"
--
-- The 2-way join alone is SAFE (exit code 0):
--
--   .venv/bin/punctuated check --setup sql/safety_check.sql \
--     --sql "SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction"
--
-- The statements below only declare the tables; `punctuated check` reads no rows.

-- Auction ids are unique: every auction row implies "no more auctions with this id".
CREATE TABLE IF NOT EXISTS auctions (id BIGINT, seller BIGINT, category INT, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct');

-- Bids carry punctuations "no more bids for auction a".
CREATE TABLE IF NOT EXISTS bids (auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN)
USING parquet
TBLPROPERTIES ('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct');

-- People declare no punctuation scheme and no unique key.
CREATE TABLE IF NOT EXISTS people (pid BIGINT, name STRING)
USING parquet;
