-- NEXMark q8 with Spark's watermarks (engine "watermark": both views carry
-- withWatermark("dateTime", "0 seconds")): the same band join as q8.sql, its state evicted by
-- the watermark.
SELECT P.id, P.name, P.dateTime AS registered, A.id AS auction, A.dateTime AS opened
FROM person AS P INNER JOIN auction AS A
  ON P.id = A.seller AND A.dateTime BETWEEN P.dateTime AND P.dateTime + INTERVAL 10 SECONDS
