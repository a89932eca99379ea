package punctuated.join.multi

import punctuated.compat.MemoryStream
import org.apache.spark.sql.streaming.StreamingQuery

import punctuated.conf.PunctuatedConf

/**
 * The hypercube's shares weighed by the first micro-batch's rows ([[MultiJoinShareWeights]],
 * `spark.punctuated.join.shareWeights`): a chain a(k) ⋈ b(k, v) ⋈ c(v) on 4 partitions whose
 * first batch is mostly a's rows replicates c (shares (4, 1)), mostly c's replicates a
 * ((1, 4)), `equal` keeps the rule for inputs of one size ((2, 2)); the rows each exchange
 * sends are the ones the chosen shares imply, the batch's progress counts its rows once, the
 * results are the join's, and the plan log's shares win after a restart whatever later
 * batches weigh.
 */
class MultiJoinShareWeightsSuite extends XYChain {
  import testImplicits._

  test("weighted shares: the fewest copies of the rows given") {
    val chain = Seq(Set(0), Set(0, 1), Set(1))
    assert(Hypercube.chooseWeighted(4, chain.zip(Seq(46L, 3L, 1L)), 2).shares == Seq(4, 1))
    assert(Hypercube.chooseWeighted(4, chain.zip(Seq(1L, 3L, 46L)), 2).shares == Seq(1, 4))
    assert(Hypercube.chooseWeighted(4, chain.zip(Seq(1L, 1L, 1L)), 2).shares ==
      Hypercube.choose(4, chain.map(_.toSeq.sorted), 2).shares)
    // a punctuation of b binding k alone pins class 0: it counts as a row of a
    assert(Hypercube.chooseWeighted(4, Seq(Set(0) -> 10L, Set(1) -> 10L, Set(0, 1) -> 1L), 2).shares == Seq(2, 2))
    // a cycle with one heavy input a(x, y): the class it lacks (z) gets share 1, a is not copied
    val cycle = Seq(Set(0, 1) -> 100L, Set(1, 2) -> 1L, Set(0, 2) -> 1L)
    assert(Hypercube.chooseWeighted(8, cycle, 3).shares == Seq(4, 2, 1))
  }

  private def execution(q: StreamingQuery) =
    q.asInstanceOf[punctuated.compat.StreamingQueryWrapper].streamingQuery.lastExecution

  private def multiJoin(q: StreamingQuery) =
    execution(q).executedPlan.collect { case m: PunctuatedMultiJoinExec => m }.head

  /** (rows read, rows sent) of each input's exchange in the last batch. */
  private def routed(q: StreamingQuery): Seq[(Long, Long)] =
    execution(q).executedPlan.collect { case e: MultiJoinExchangeExec =>
      e.metrics("numInputRows").value -> e.metrics("numRoutedRows").value
    }

  /** a: `na` keys 1..na (w = 100 + k); b: (k, k % 3); c: v 0..2. */
  private def data(na: Int, nc: Int) = (
    (1 to na).map(k => XY(Some(k), Some(100 + k))),
    (1 to na).map(k => XY(Some(k), Some(k % 3))),
    (0 until nc).map(v => XY(Some(v % 3), Some(1000 + v))))

  private def expected(as: Seq[XY], bs: Seq[XY], cs: Seq[XY]) =
    for (x <- as; y <- bs if x.x == y.x; z <- cs if y.y == z.x) yield (x.x.get, y.y.get, x.y.get, z.y.get)

  private def answer(name: String) =
    spark.table(name).as[(Long, Long, Long, Long)].collect().toSeq

  /** Runs the chain on 4 partitions with the first batch given; checks and returns the shares. */
  private def firstBatch(weights: String, na: Int, nc: Int, shares: Seq[Int]): Unit =
    withSQLConf("spark.sql.shuffle.partitions" -> "4", PunctuatedConf.ShareWeights -> weights,
        PunctuatedConf.SafetyMode -> "warn") {
      val (a, b, c, joined) = chain()
      val (as, bs, cs) = data(na, nc)
      // everything before the start: the first batch holds all of it
      a.addData(as); b.addData(bs); c.addData(cs)
      val name = s"weights_${weights}_${na}_$nc"
      val q = joined.writeStream.format("memory").queryName(name).start()
      try {
        q.processAllAvailable()
        val m = multiJoin(q)
        assert(m.shares == shares, s"$weights, a $na rows, c $nc rows")
        // each exchange sent the copies the shares imply: a lacks v, c lacks k, b has both
        val cube = Hypercube(m.shares.toIndexedSeq)
        assert(routed(q) == Seq(na.toLong -> na.toLong * cube.replication(Seq(0)), na.toLong -> na.toLong,
          nc.toLong -> nc.toLong * cube.replication(Seq(1))), routed(q))
        // counting the first batch read it again, without counting it twice
        assert(q.recentProgress.map(_.numInputRows).sum == 2 * na + nc, q.recentProgress.map(_.json).mkString)
        assert(answer(name).sorted == expected(as, bs, cs).sorted)
      } finally q.stop()
    }

  test("the first batch's sizes choose the shares; equal weights keep the rule") {
    firstBatch("first_batch", na = 60, nc = 3, shares = Seq(4, 1))
    firstBatch("first_batch", na = 2, nc = 90, shares = Seq(1, 4))
    firstBatch("equal", na = 60, nc = 3, shares = Seq(2, 2))
  }

  test("after a restart the recorded shares win whatever the next batches weigh") {
    withTempDir { dir =>
      withSQLConf("spark.sql.shuffle.partitions" -> "4", PunctuatedConf.SafetyMode -> "warn") {
        val (as, bs, cs) = data(60, 3)
        val (as2, bs2, cs2) = ((61 to 62).map(k => XY(Some(k), Some(100 + k))),
          (61 to 62).map(k => XY(Some(k), Some(k % 3))), (3 until 200).map(v => XY(Some(v % 3), Some(1000 + v))))
        val out = new java.io.File(dir, "out").getCanonicalPath
        def start(feed: (MemoryStream[XY], MemoryStream[XY], MemoryStream[XY]) => Unit) = {
          val (a, b, c, joined) = chain()
          feed(a, b, c)
          joined.writeStream.format("parquet").option("path", out)
            .option("checkpointLocation", new java.io.File(dir, "ckpt").getCanonicalPath).start()
        }
        def written() = spark.read.parquet(out).as[(Long, Long, Long, Long)].collect().toSeq.sorted
        val q1 = start { (a, b, c) => a.addData(as); b.addData(bs); c.addData(cs) }
        try { q1.processAllAvailable(); assert(multiJoin(q1).shares == Seq(4, 1)) } finally q1.stop()
        assert(written() == expected(as, bs, cs).sorted)
        // the new run resumes after batch 0 (a MemoryStream's offsets count its addData calls):
        // its batch is as2, bs2, cs2, mostly c's rows, which alone would weigh for (1, 4)
        val q2 = start { (a, b, c) => a.addData(as); b.addData(bs); c.addData(cs); a.addData(as2); b.addData(bs2); c.addData(cs2) }
        try {
          q2.processAllAvailable()
          assert(multiJoin(q2).shares == Seq(4, 1), "the plan log's shares")
        } finally q2.stop()
        assert(written() == expected(as ++ as2, bs ++ bs2, cs ++ cs2).sorted, "every result once")
      }
    }
  }
}
