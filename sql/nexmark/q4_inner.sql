-- NEXMark q4, inner query only (variant "q4_inner" of benchmarks/nexmark.py): the closing
-- price of each auction (its highest bid among the bids placed while it was open), with the
-- auction's category. The full q4 then averages these per category; that outer AVG can
-- never be closed by punctuations (NEXMark has no "no more auctions of category c"), so it
-- has no final result in append mode, with Punctuated's plan or Spark's own. This inner
-- query does: each auction's row is final once both inputs closed its id (its unique id on
-- the auction side, the bid stream's "no more bids for auction a" after its expiry).
SELECT A.id, A.category, MAX(B.price) AS final
FROM auction AS A INNER JOIN bid AS B ON A.id = B.auction
  AND B.dateTime BETWEEN A.dateTime AND A.expires
GROUP BY A.id, A.category
