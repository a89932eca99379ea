-- NEXMark q3's floor (engine "floor" of benchmarks/nexmark.py, a reference, not an answer):
-- the same two streams through the same filters, with no join. Every engine pays this much
-- before it joins anything (generating, filtering, shuffling nothing, Spark's per-batch
-- planning and logs), so no join plan can be faster: floor / native bounds what any join
-- plan can gain over Spark's own on this query.
SELECT A.seller AS k, A.id
FROM auction AS A
WHERE A.category = 10
UNION ALL
SELECT P.id AS k, P.id
FROM person AS P
WHERE P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA'
