-- NEXMark q4 (average closing price per category): the winning (highest) bid of each
-- auction among the bids placed while it was open, averaged per category.
-- Streaming, this is a join followed by two aggregations: Spark's own engine refuses it
-- without watermarks. Punctuated's plan cannot give it final rows either: the outer AVG
-- groups by category, and no punctuation closes a category (NEXMark has no "no more
-- auctions of category c"), so in append mode no average is ever final: the outer
-- aggregation stays Spark's own, which refuses append mode without a watermark. The inner
-- query, closed per auction, runs as q4_inner.sql.
-- As a batch query it is the reference answer.
SELECT Q.category, AVG(Q.final) AS avgPrice
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction AS A INNER JOIN bid AS B ON A.id = B.auction
    AND B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.category
) AS Q
GROUP BY Q.category
