-- NEXMark q8 (monitor new users), as a time-band join: the people who opened an auction
-- within 10 seconds of registering. (The reference query groups both streams into 10-second
-- tumbling windows and joins on the window; a band of the window's width is the join that
-- Spark's watermarks and Punctuated's time punctuations both purge.)
-- Reads the temporary views person and auction (streams of the `nexmark` source). With the
-- plugin (options punctuations and timePunctuations): person ids are unique and both streams
-- punctuate `dateTime<=`, so a person leaves the state once the auction stream has passed its
-- band, an auction once the person stream has passed its time; engine "watermark" runs the same
-- SQL over withWatermark("dateTime", "0 seconds") (q8_watermark.sql); without either, Spark's own
-- join keeps every row.
SELECT P.id, P.name, P.dateTime AS registered, A.id AS auction, A.dateTime AS opened
FROM person AS P INNER JOIN auction AS A
  ON P.id = A.seller AND A.dateTime BETWEEN P.dateTime AND P.dateTime + INTERVAL 10 SECONDS
