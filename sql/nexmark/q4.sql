-- NEXMark q4 (average closing price per category): the winning (highest) bid of each
-- auction among the bids placed while it was open, averaged per category.
-- Streaming, this is a join followed by two aggregations: Spark's own engine refuses it
-- without watermarks, and Punctuated's plan needs its punctuation-aware aggregation
-- (not in this branch). As a batch query it is the reference answer.
SELECT Q.category, AVG(Q.final) AS avgPrice
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction AS A INNER JOIN bid AS B ON A.id = B.auction
    AND B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.category
) AS Q
GROUP BY Q.category
