-- NEXMark q20's floor (engine "floor" of benchmarks/nexmark.py, a reference, not an answer):
-- the same two streams through the same filter, with no join. Every engine pays this much
-- before it joins anything, so no join plan can be faster: floor / native bounds what any
-- join plan can gain over Spark's own on this query.
SELECT B.auction AS k, B.bidder AS v
FROM bid AS B
UNION ALL
SELECT A.id AS k, A.seller AS v
FROM auction AS A
WHERE A.category = 10
