package punctuated.join

import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/** A row of one of the three streams of [[MultiJoinSuite]]: key, value, marker. */
case class KV(k: Option[Long], v: Option[String], is_punct: Boolean = false)

/**
 * Joins of three streams run as a tree of two punctuated joins (Li et al. 2006, §4: binary
 * join trees). The lower join's output punctuations — a key both its inputs have closed —
 * are the upper join's punctuations of its intermediate input (a derived declaration), so
 * the third stream's state is purged too and no state is left once every key is closed.
 * These run with `spark.punctuated.join.plan=written`; by default the same queries run as one
 * multi-way join (`punctuated.join.multi.MultiWayJoinSuite`, same answers).
 * [[MultiJoinRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  // the tree of binary joins as written (by default such groups run as one multi-way join:
  // MultiWayJoinSuite)
  override protected def sparkConf = super.sparkConf
    .set(punctuated.conf.PunctuatedConf.JoinPlan, "written")

  private def kv(k: Long, v: String) = KV(Some(k), Some(v))
  private def close(k: Long) = KV(Some(k), None, is_punct = true)

  private def streams() = {
    val (a, b, c) = (MemoryStream[KV], MemoryStream[KV], MemoryStream[KV])
    def decl(s: MemoryStream[KV], name: String) =
      declare(s.toDF().toDF("k", "v", "is_punct").selectExpr(s"k AS ${name}_k", s"v AS ${name}_v",
        s"is_punct AS ${name}_p"), name, Schemes -> s"${name}_k", Marker -> s"${name}_p")
    (a, b, c, decl(a, "a"), decl(b, "b"), decl(c, "c"))
  }

  /** State rows and held punctuations summed over the punctuated operators (and their number). */
  private def AssertAllStates(rows: Long, punctuations: Long, operators: Int = 2) =
    AssertOnQuery(s"all punctuated operators: $rows rows, $punctuations punctuations") { q =>
      val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
      assert(ops.length == operators, settledProgress(q).json)
      assert(ops.map(_.numRowsTotal).sum == rows, settledProgress(q).json)
      assert(ops.map(_.customMetrics.get("numPunctuationsHeld").longValue).sum == punctuations,
        settledProgress(q).json)
      true
    }

  test("a star join of three streams on one key: the upper join purges on the lower join's punctuations") {
    val (a, b, c, da, db, dc) = streams()
    val joined = da.join(db, da("a_k") === db("b_k")).join(dc, da("a_k") === dc("c_k"))
      .select(da("a_k"), da("a_v"), db("b_v"), dc("c_v"))
    testStream(joined)(
      AddData(a, kv(1, "a1"), kv(2, "a2")),
      AddData(b, kv(1, "b1")),
      AddData(c, kv(1, "c1"), kv(2, "c2")),
      CheckNewAnswer((1L, "a1", "b1", "c1")),
      AssertOnQuery("two punctuated joins") { q =>
        q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }.size == 2
      },
      // a and b close 1: the lower join forgets key 1 and says so to the upper join, which
      // forgets c's rows of key 1 (no (a, b) pair with key 1 can come any more)
      AddData(a, close(1)),
      AddData(b, close(1)),
      CheckNewAnswer(),
      // left: lower a2; upper (a1, b1) and c2; held: the upper join's punctuation of its left input
      AssertAllStates(rows = 3, punctuations = 1),
      // c's later rows of key 1 still meet the stored pair, and are not stored
      AddData(c, kv(1, "c3")),
      CheckNewAnswer((1L, "a1", "b1", "c3")),
      StopStream,
      StartStream(),
      AddData(c, close(1)),
      AddData(b, kv(2, "b2")),
      CheckNewAnswer((2L, "a2", "b2", "c2")),
      AddData(a, close(2)), AddData(b, close(2)), AddData(c, close(2)),
      CheckNewAnswer(),
      AssertAllStates(rows = 0, punctuations = 0))
  }

  test("the same star join written in SQL, in either join order, or with WHERE", NotOnRocksDB) {
    for ((name, order) <- Seq("abc" -> "a JOIN b ON a_k = b_k JOIN c ON b_k = c_k",
        "cab" -> "c JOIN a ON c_k = a_k JOIN b ON a_k = b_k",
        "where" -> "a, b, c WHERE a_k = b_k AND b_k = c_k AND c_v <> 'skip'")) {
      val (a, b, c, da, db, dc) = streams()
      da.createOrReplaceTempView("a"); db.createOrReplaceTempView("b"); dc.createOrReplaceTempView("c")
      val joined = spark.sql(s"SELECT a_k, a_v, b_v, c_v FROM $order")
      withClue(name) {
        testStream(joined)(
          AddData(a, kv(5, "a5"), close(5)),
          AddData(b, kv(5, "b5"), close(5)),
          AddData(c, kv(5, "c5"), close(5)),
          CheckNewAnswer((5L, "a5", "b5", "c5")),
          AddData(a, kv(6, "a6")),   // one more batch: every punctuation has taken effect
          CheckNewAnswer(),
          AssertAllStates(rows = 1, punctuations = 0))
      }
    }
  }

  test("four streams, each joined on the first one's key: every level passes the key's punctuations up", NotOnRocksDB) {
    val (a, b, c, da, db, dc) = streams()
    val d = MemoryStream[KV]
    val dd = declare(d.toDF().toDF("k", "v", "is_punct").selectExpr("k AS d_k", "v AS d_v", "is_punct AS d_p"),
      "d", Schemes -> "d_k", Marker -> "d_p")
    Seq("a" -> da, "b" -> db, "c" -> dc, "d" -> dd).foreach { case (n, df) => df.createOrReplaceTempView(n) }
    val joined = spark.sql(
      "SELECT a_k, a_v, b_v, c_v, d_v FROM a JOIN b ON a_k = b_k JOIN c ON a_k = c_k JOIN d ON a_k = d_k")
    testStream(joined)(
      AddData(a, kv(1, "a1"), kv(2, "a2")), AddData(b, kv(1, "b1"), kv(2, "b2")),
      AddData(c, kv(1, "c1")), AddData(d, kv(1, "d1"), kv(2, "d2")),
      CheckNewAnswer((1L, "a1", "b1", "c1", "d1")),
      AddData(a, close(1)), AddData(b, close(1)), AddData(c, close(1)),
      CheckNewAnswer(),
      // key 1 is gone below the top join, and d's row of key 1 too; the top join keeps
      // (a1, b1, c1) until d closes 1
      AddData(d, kv(1, "d3"), close(1)),
      AddData(c, kv(2, "c2")),
      CheckNewAnswer((1L, "a1", "b1", "c1", "d3"), (2L, "a2", "b2", "c2", "d2")),
      AddData(a, close(2)), AddData(b, close(2)), AddData(c, close(2)), AddData(d, close(2)),
      CheckNewAnswer(),
      AssertAllStates(rows = 0, punctuations = 0, operators = 3))
  }

  /** Random cases of the random-interleavings test. */
  protected def randomCases: Int = 10

  test("random interleavings of a star join: output = the batch join, nothing left once every key closes") {
    val rng = new scala.util.Random(2006)
    for (caseNo <- 0 until randomCases) {
      val (a, b, c, da, db, dc) = streams()
      val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_k") === dc("c_k"))
        .select(da("a_k"), da("a_v"), db("b_v"), dc("c_v"))
      // a grammatical interleaving: a stream's rows of a key all come before its punctuation
      val sources = Seq(a, b, c)
      val open = Array.fill(3)(scala.collection.mutable.Set(1L, 2L, 3L, 4L))
      val events = scala.collection.mutable.ArrayBuffer.empty[(Int, KV)]
      for (i <- 0 until 30) {
        val s = rng.nextInt(3)
        if (open(s).nonEmpty) {
          val k = open(s).toSeq(rng.nextInt(open(s).size))
          if (rng.nextInt(4) == 0) { open(s) -= k; events += s -> close(k) }
          else events += s -> kv(k, s"${"abc" (s)}$i")
        }
      }
      for (s <- 0 until 3; k <- open(s).toSeq.sorted) events += s -> close(k)
      val cuts = (Seq(0, events.size) ++ Seq.fill(4)(rng.nextInt(events.size + 1))).distinct.sorted
      val batches = cuts.zip(cuts.tail).map { case (from, to) => events.slice(from, to).toSeq }
      val restartAfter = rng.nextInt(math.max(1, batches.size - 1))   // a batch runs after the restart
      val actions = batches.zipWithIndex.flatMap { case (batch, i) =>
        val add = MultiAddData(sources.indices.map(s => sources(s) -> batch.collect { case (`s`, e) => e }): _*)
        if (i == restartAfter && i < batches.size - 1) Seq(add, ProcessAllAvailable(), StopStream, StartStream())
        else Seq(add)
      }
      val rows = sources.indices.map(s => events.collect { case (`s`, KV(Some(k), Some(v), false)) => k -> v })
      val expected = for ((k, av) <- rows(0); (kb, bv) <- rows(1) if kb == k; (kc, cv) <- rows(2) if kc == k)
        yield (k, av, bv, cv)
      withClue(s"case $caseNo: ${events.mkString(", ")}") {
        testStream(joined)(actions ++ Seq(CheckAnswer(expected.toSeq: _*), AssertAllStates(rows = 0, punctuations = 0)): _*)
      }
    }
  }

  test("a third stream joined on another column than the lower join's key is never purged: strict refuses", NotOnRocksDB) {
    val (_, _, _, da, db, dc) = streams()
    val chain = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
    val e = intercept[org.apache.spark.sql.AnalysisException] {
      chain.writeStream.format("memory").queryName("chain").start()
    }
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
    assert(e.getMessage.contains("input c") && e.getMessage.contains("(a ⋈ b)"), e.getMessage)
  }
}

class MultiJoinRocksDBSuite extends MultiJoinSuite with OnRocksDB {
  override protected def randomCases: Int = 4
}
