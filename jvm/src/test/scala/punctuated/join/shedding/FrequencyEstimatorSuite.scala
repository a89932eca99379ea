package punctuated.join.shedding

import org.scalatest.funsuite.AnyFunSuite

/** The estimator and the priorities of load shedding, pure (no Spark). */
class FrequencyEstimatorSuite extends AnyFunSuite {

  test("counts add per batch; halving after historyRows arrivals drops zeros") {
    val e = new FrequencyEstimator[String](historyRows = 4, historyValues = 10)
    e.update(Seq("a" -> 2L, "b" -> 1L), batch = 0)
    assert(e.counts == Map("a" -> 2L, "b" -> 1L) && e.sinceHalving == 3)
    e.update(Seq("c" -> 3L), batch = 1)
    assert(e.counts == Map("a" -> 1L, "c" -> 1L) && e.sinceHalving == 0)
    assert(e.firstBatch("a").contains(0L) && e.firstBatch("c").contains(1L) && e.firstBatch("b").isEmpty)
  }

  test("keeps the historyValues largest counts, ties to the smaller value") {
    val e = new FrequencyEstimator[String](historyRows = 1000, historyValues = 2)
    e.update(Seq("d" -> 1L, "c" -> 1L, "b" -> 5L, "a" -> 1L), batch = 0)
    assert(e.counts == Map("b" -> 5L, "a" -> 1L) && e.total == 6L)
    assert(e.estimate("d") == 0L)
  }

  test("byte-keyed estimators survive a round trip through bytes; lifetimes are kept") {
    val e = new FrequencyEstimator[ValueBytes](10, 10)
    e.update(Seq(ValueBytes(Array[Byte](1, 2)) -> 3L, ValueBytes(Array[Byte](-1)) -> 1L), batch = 4)
    e.observeLifetime(3); e.observeLifetime(5)
    val back = FrequencyEstimator.fromBytes(FrequencyEstimator.toBytes(e), 10, 10)
    assert(back.counts == e.counts && back.sinceHalving == 4 && back.meanLifetime.contains(4.0))
    assert(back.firstBatch(ValueBytes(Array[Byte](1, 2))).contains(4L))
    // canonical byte order is unsigned: 0xff sorts after 0x01
    assert(ValueBytes.order.lt(ValueBytes(Array[Byte](1, 2)), ValueBytes(Array[Byte](-1))))
  }

  test("priorities: PROB, LIFE, RAND") {
    assert(Priorities.prob(9, 10) == 0.9 && Priorities.prob(1, 10) == 0.1)
    assert(Priorities.prob(0, 0) == 0.0)                       // nothing seen yet
    assert(Priorities.life(4, 8, None, 10) == 0.5)             // no lifetime observed: PROB
    assert(Priorities.life(4, 8, Some(5.0), 2) == 1.5)         // 3 batches left
    assert(Priorities.life(4, 8, Some(5.0), 9) == 0.5)         // at least 1
    val row = Array[Byte](1, 2, 3)
    assert(Priorities.rand(row, 3, 0) == Priorities.rand(row.clone(), 3, 0))
    assert(Seq(1L, 2L, 3L, 4L).map(Priorities.rand(row, _, 0)).distinct.size > 1)
  }

  test("victims: lowest priority first; on ties rows of earlier batches, then by content hash") {
    import Priorities.Candidate
    val cs = IndexedSeq(
      Candidate(5, fresh = true, 1, 0, Array[Byte](0)),
      Candidate(1, fresh = true, 9, 0, Array[Byte](1)),
      Candidate(1, fresh = false, 9, 1, Array[Byte](2)),
      Candidate(1, fresh = true, 3, 1, Array[Byte](3)))
    assert(Priorities.victims(cs, 2) == Seq(2, 3))
    assert(Priorities.victims(cs, 0).isEmpty)
    // independent of the order the candidates are listed in
    assert(Priorities.victims(cs.reverse, 2).map(cs.reverse(_)).toSet == Set(cs(2), cs(3)))
  }
}
