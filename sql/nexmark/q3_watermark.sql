-- NEXMark q3 with the best watermark + time-range rewrite Spark allows (engine "watermark"
-- of benchmarks/nexmark.py; the views carry withWatermark("dateTime", "0 seconds")).
-- The generator names as seller one of the last 1000 people or one of the next 10 not yet
-- created, so an auction comes at most {person_lag_ms} ms after its seller and at most
-- {person_lead_ms} ms before (at the run's eventsPerSecond): with these bounds the
-- rewrite loses no result of this generator, and Spark can drop state behind the watermark.
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
  AND A.dateTime BETWEEN P.dateTime - INTERVAL {person_lead_ms} MILLISECONDS
                     AND P.dateTime + INTERVAL {person_lag_ms} MILLISECONDS
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')
