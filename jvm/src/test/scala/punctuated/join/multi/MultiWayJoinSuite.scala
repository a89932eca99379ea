package punctuated.join.multi

import org.apache.spark.sql.DataFrame
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.PunctuatedSymmetricHashJoinExec
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Joins of three or more streams run as one [[PunctuatedMultiJoinExec]] (the `mjoin` plan)
 * in real queries: a chain over two keys, a cycle, a star on one key, five inputs; stopped and
 * restarted mid-stream, over 1, 4 and 7 partitions (hypercube cells of different shapes; the
 * random cases draw 2 too), each ending with every value punctuated and no state left (Li et
 * al. 2006, §3.2 chained purge). [[MultiWayJoinRocksDBSuite]] runs the same on RocksDB (4
 * partitions, fewer random cases).
 */
class MultiWayJoinSuite extends PunctuatedStreamTest with XYRows {
  import testImplicits._


  /**
   * The query has one punctuated operator, the multi-way join, with this state: a stored row
   * of input i is in at most every cell agreeing with it (the shares of the classes i lacks),
   * a held punctuation in every cell agreeing on the class it binds, and every copy counts.
   *
   * @param rows         the input of each stored row
   * @param punctuations each held punctuation, as (input, the column it binds)
   */
  private def AssertMultiJoin(rows: Seq[Int], punctuations: Seq[(Int, String)]) =
    AssertOnQuery(s"one multi-way join: rows of $rows, punctuations $punctuations") { q =>
      val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
      assert(ops.map(_.operatorName).toSeq == Seq("punctuatedMultiJoin"), settledProgress(q).json)
      val plan = q.lastExecution.executedPlan
      assert(plan.collect { case j: PunctuatedSymmetricHashJoinExec => j }.isEmpty, plan.treeString)
      val m = plan.collect { case m: PunctuatedMultiJoinExec => m }.head
      def copies(bound: Seq[Int]): Long = m.shares.indices.filterNot(bound.contains).map(m.shares(_).toLong).product
      val expectedRows = rows.map(i => copies(m.inputs(i).classes)).sum
      val expectedHeld = punctuations.map { case (i, column) =>
        copies(Seq(m.inputs(i).classes(m.inputs(i).keys.map(_.name).indexOf(column))))
      }.sum
      // a copy in a cell where it has no partner left goes earlier than the row elsewhere
      // (each purge is decided in its cell): between one copy per row and every copy
      if (m.shares.product == 1) assert(ops.head.numRowsTotal == rows.size, settledProgress(q).json)
      else assert(ops.head.numRowsTotal >= rows.size && ops.head.numRowsTotal <= expectedRows,
        s"shares ${m.shares}: ${ops.head.numRowsTotal} rows, not in [${rows.size}, $expectedRows]: ${settledProgress(q).json}")
      assert(ops.head.customMetrics.get("numPunctuationsHeld") == expectedHeld,
        s"shares ${m.shares}: ${settledProgress(q).json}")
      true
    }

  private def AssertEmpty = AssertMultiJoin(Nil, Nil)


  private def withPartitions(n: Int)(body: => Unit): Unit =
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> n.toString, PunctuatedConf.JoinPlan -> "mjoin",
      PunctuatedConf.SafetyMode -> "warn")(withClue(s"$n partitions: ")(body))

  /** The partition counts (hypercube cells) of the chain and the cycle (RocksDB: 4 only). */
  protected def partitionCounts: Seq[Int] = Seq(1, 4, 7)

  for (partitions <- partitionCounts) {
    test(s"chain a(k) ⋈ b(k, v) ⋈ c(v), $partitions partitions: b's k and c's v purge a's rows") {
      withPartitions(partitions) {
        val (a, da) = stream("a", "a_k", "a_w", "a_k")
        val (b, db) = stream("b", "b_k", "b_v", "b_k; b_v")
        val (c, dc) = stream("c", "c_v", "c_w", "c_v")
        val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
          .select(da("a_k"), db("b_v"), da("a_w"), dc("c_w"))
        testStream(joined)(
          AddData(a, xy(1, 10)), AddData(b, xy(1, 7)), AddData(c, xy(7, 20)),
          CheckNewAnswer((1L, 7L, 10L, 20L)),
          AddData(b, xy(1, 8)), AddData(c, xy(8, 21)),
          CheckNewAnswer((1L, 8L, 10L, 21L)),
          AssertMultiJoin(Seq(0, 1, 1, 2, 2), Nil),
          StopStream,
          StartStream(),
          // b closes k = 1, c closes v = 7: a(1) still joins a future c(8) through b(1, 8)
          AddData(b, onX(1)), AddData(c, onX(7)),
          CheckNewAnswer(),
          AssertMultiJoin(Seq(0, 1, 1, 2, 2), Seq(1 -> "b_k", 2 -> "c_v")),
          AddData(c, onX(8)),
          CheckNewAnswer(),
          AssertMultiJoin(Seq(1, 1, 2, 2), Seq(1 -> "b_k", 2 -> "c_v", 2 -> "c_v")),   // a(1) is gone
          StopStream,
          StartStream(),
          // a's new row still meets b's and c's stored rows, then goes at once; c(7) is late
          AddData(a, xy(1, 11)), AddData(c, xy(7, 99)),
          CheckNewAnswer((1L, 7L, 11L, 20L), (1L, 8L, 11L, 21L)),
          AssertMultiJoin(Seq(1, 1, 2, 2), Seq(1 -> "b_k", 2 -> "c_v", 2 -> "c_v")),
          AssertCounted("numLateRowsDropped", 1),
          AddData(a, onX(1)), AddData(b, onY(7)), AddData(b, onY(8)),
          CheckNewAnswer(),
          AssertEmpty)
      }
    }
  }

  private def chainQuery(bSchemes: String, bUnique: Option[String] = None) = {
    val (a, da) = stream("a", "a_k", "a_w", "a_k")
    val b = MemoryStream[XY]
    val db = declare(b.toDF().selectExpr("x AS b_k", "y AS b_v", "p AS b_p"), "b",
      (Seq(Schemes -> bSchemes, Marker -> "b_p") ++ bUnique.map(Unique -> _)): _*)
    val (c, dc) = stream("c", "c_v", "c_w", "c_v")
    (a, b, c, da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
      .select(da("a_k"), db("b_v"), da("a_w"), dc("c_w")))
  }

  test("chain: a late row is dropped and counted once, whatever cells its copies reach; or fails") {
    withPartitions(4) {
      val (_, _, c, joined) = chainQuery("b_k; b_v")
      testStream(joined)(
        AddData(c, onX(7)),
        CheckNewAnswer(),
        AssertCounted("numPunctuationsReceived", 1),   // its copies reach 2 cells of the 4
        AddData(c, xy(7, 1)),               // c(7) goes to 2 cells of the 4
        CheckNewAnswer(),
        AssertCounted("numLateRowsDropped", 1))
    }
    withPartitions(2) {
      withSQLConf(PunctuatedConf.LateRows -> "fail") {
        val (_, _, c, joined) = chainQuery("b_k; b_v")
        testStream(joined)(
          AddData(c, onX(7)),
          CheckNewAnswer(),
          AddData(c, xy(7, 1)),
          ExpectFailure[org.apache.spark.SparkException] { e =>
            assert(e.getMessage.contains("PUNCTUATED_LATE_ROW") && e.getMessage.contains("c_v=7"), e.getMessage)
          })
      }
    }
  }

  test("chain: an invalid punctuation is counted once (it goes to one cell), or fails") {
    withPartitions(4) {
      withSQLConf(PunctuatedConf.InvalidPunctuations -> "drop") {
        val (_, b, _, joined) = chainQuery("b_k; b_v")
        testStream(joined)(
          AddData(b, XY(Some(1), Some(7), p = true)),     // sets both columns: no scheme does
          CheckNewAnswer(),
          AssertCounted("numInvalidPunctuationsDropped", 1),
          AssertCounted("numPunctuationsReceived", 0))
      }
      val (_, b, _, joined) = chainQuery("b_k; b_v")
      testStream(joined)(
        AddData(b, XY(Some(1), Some(7), p = true)),
        ExpectFailure[org.apache.spark.SparkException] { e =>
          assert(e.getMessage.contains("PUNCTUATED_INVALID_PUNCTUATION"), e.getMessage)
        })
    }
  }

  test("chain, 4 cells: b's unique key k closes k in every cell agreeing on k, also where b's row is not stored") {
    // the cells below are those of shares (2, 2), every input weighted alike (by the first
    // batch's rows, b's pinning k alone with its unique key, they would be (4, 1))
    withPartitions(4)(withSQLConf(PunctuatedConf.ShareWeights -> "equal") {
      val (a, b, c, joined) = chainQuery("b_v", bUnique = Some("b_k"))
      testStream(joined)(
        AddData(a, xy(1, 10)), AddData(b, xy(1, 7)), AddData(c, xy(7, 20)),
        CheckNewAnswer((1L, 7L, 10L, 20L)),
        // shares (2, 2): a(1) is in 2 cells; where b(1, 7) is not, b's unique key closed k = 1
        // and a(1) has no partner left: gone. Left: a(1) and b(1, 7) in their cell, c(7) in 2
        // cells; b's implied punctuation k = 1 held in the 2 cells agreeing on k
        AssertOnQuery("a(1) gone where b(1, 7) is not") { q =>
          val op = punctuatedProgress(q)
          assert(op.numRowsTotal == 4 && op.customMetrics.get("numPunctuationsHeld") == 2, settledProgress(q).json)
          true
        },
        AddData(b, xy(1, 8)),              // late: b's own key 1 is closed
        CheckNewAnswer(),
        AssertCounted("numLateRowsDropped", 1),
        AddData(c, onX(7)),
        CheckNewAnswer(),
        AddData(a, onX(1)), AddData(b, onY(7)),
        CheckNewAnswer(),
        AssertEmpty)
    })
  }

  for (partitions <- partitionCounts) {
    test(s"cycle a(x, y) ⋈ b(y, z) ⋈ c(z, x), $partitions partitions") {
      withPartitions(partitions) {
        val (a, da) = stream("a", "a_x", "a_y", "a_x; a_y")
        val (b, db) = stream("b", "b_y", "b_z", "b_y; b_z")
        val (c, dc) = stream("c", "c_z", "c_x", "c_z; c_x")
        val joined = da.join(db, da("a_y") === db("b_y")).join(dc, db("b_z") === dc("c_z") && dc("c_x") === da("a_x"))
          .select(da("a_x"), da("a_y"), db("b_z"))
        testStream(joined)(
          AddData(a, xy(1, 2)), AddData(b, xy(2, 3)), AddData(c, xy(3, 1), xy(3, 9)),
          CheckNewAnswer((1L, 2L, 3L)),
          AssertMultiJoin(Seq(0, 1, 2, 2), Nil),
          StopStream,
          StartStream(),
          // b closes y = 2, c closes z = 3: a(1, 2) can meet no future result
          AddData(b, onX(2)), AddData(c, onX(3)),
          CheckNewAnswer(),
          AssertMultiJoin(Seq(1, 2, 2), Seq(1 -> "b_y", 2 -> "c_z")),
          AddData(a, xy(9, 2)),                         // joins b(2, 3) and c(3, 9), then goes
          CheckNewAnswer((9L, 2L, 3L)),
          AssertMultiJoin(Seq(1, 2, 2), Seq(1 -> "b_y", 2 -> "c_z")),
          StopStream,
          StartStream(),
          AddData(a, onX(1), onX(9), onY(2)), AddData(b, onY(3)), AddData(c, onY(1), onY(9)),
          CheckNewAnswer(),
          AssertEmpty)
      }
    }
  }

  test("star on one key: one operator, the answers of the tree of binary joins, no state left") {
    for (plan <- Seq("mjoin", "written")) withSQLConf(PunctuatedConf.JoinPlan -> plan) {
      val (a, da) = stream("a", "a_k", "a_v", "a_k")
      val (b, db) = stream("b", "b_k", "b_v", "b_k")
      val (c, dc) = stream("c", "c_k", "c_v", "c_k")
      val joined = da.join(db, da("a_k") === db("b_k")).join(dc, da("a_k") === dc("c_k"))
        .select(da("a_k"), da("a_v"), db("b_v"), dc("c_v"))
      val operators = if (plan == "mjoin") 1 else 2
      withClue(plan) {
        testStream(joined)(
          AddData(a, xy(1, 11), xy(2, 12)), AddData(b, xy(1, 21)), AddData(c, xy(1, 31), xy(2, 32)),
          CheckNewAnswer((1L, 11L, 21L, 31L)),
          AddData(a, onX(1)), AddData(b, onX(1)),
          CheckNewAnswer(),
          AddData(c, xy(1, 33)),
          CheckNewAnswer((1L, 11L, 21L, 33L)),
          StopStream,
          StartStream(),
          AddData(c, onX(1)), AddData(b, xy(2, 22)),
          CheckNewAnswer((2L, 12L, 22L, 32L)),
          AddData(a, onX(2)), AddData(b, onX(2)), AddData(c, onX(2)),
          CheckNewAnswer(),
          AssertOnQuery(s"$operators punctuated operators, no state") { q =>
            val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
            assert(ops.length == operators, settledProgress(q).json)
            assert(ops.map(_.numRowsTotal).sum == 0, settledProgress(q).json)
            assert(ops.map(_.customMetrics.get("numPunctuationsHeld").longValue).sum == 0, settledProgress(q).json)
            true
          })
      }
    }
  }

  /**
   * Random grammatical interleavings (a stream's rows with a value all come before its
   * punctuation of that value) of three streams of two columns each, cut into batches, with a
   * restart: the output is the batch join, and nothing is left once everything is punctuated.
   *
   * @param punctuated per stream, whether its x and its y column are punctuated (else y is
   *                   a payload)
   * @param query      the join of the three declared streams, as (x, y) tuples per stream
   * @param expected   the batch join of the three streams' rows
   */
  /** Random cases per random-interleavings test (each a query started, restarted and run to its end). */
  protected def randomCases: Int = 8

  private def randomInterleavings(seed: Int, punctuated: Seq[(Boolean, Boolean)],
      query: (DataFrame, DataFrame, DataFrame) => DataFrame,
      expected: Seq[Seq[(Long, Long)]] => Seq[(Long, Long, Long, Long)]): Unit = {
    val rng = new scala.util.Random(seed)
    for (caseNo <- 0 until randomCases) {
      val partitions = Seq(1, 2, 4, 7)(rng.nextInt(4))
      withPartitions(partitions) {
        val declared = Seq("a", "b", "c").zip(punctuated).map { case (n, (px, py)) =>
          stream(n, s"${n}_x", s"${n}_y", (Seq(s"${n}_x").filter(_ => px) ++ Seq(s"${n}_y").filter(_ => py)).mkString("; "))
        }
        val sources = declared.map(_._1)
        val open = punctuated.map { case (px, py) =>
          (scala.collection.mutable.Set(1L, 2L, 3L).filter(_ => px), scala.collection.mutable.Set(1L, 2L, 3L).filter(_ => py))
        }
        val events = scala.collection.mutable.ArrayBuffer.empty[(Int, XY)]
        for (i <- 0 until 24) {
          val s = rng.nextInt(3)
          val (ox, oy) = open(s)
          val (px, py) = punctuated(s)
          def pick(set: scala.collection.mutable.Set[Long]) = set.toSeq.sorted.apply(rng.nextInt(set.size))
          if (rng.nextInt(4) == 0 && (ox.nonEmpty || oy.nonEmpty)) {
            if (ox.nonEmpty && (oy.isEmpty || rng.nextBoolean())) { val x = pick(ox); ox -= x; events += s -> onX(x) }
            else { val y = pick(oy); oy -= y; events += s -> onY(y) }
          } else if ((!px || ox.nonEmpty) && (!py || oy.nonEmpty)) {
            val x = if (px) pick(ox) else 1L + rng.nextInt(3)
            val y = if (py) pick(oy) else 100L + i
            events += s -> xy(x, y)
          }
        }
        for (s <- 0 until 3) {
          open(s)._1.toSeq.sorted.foreach(x => events += s -> onX(x))
          open(s)._2.toSeq.sorted.foreach(y => events += s -> onY(y))
        }
        val cuts = (Seq(0, events.size) ++ Seq.fill(4)(rng.nextInt(events.size + 1))).distinct.sorted
        val batches = cuts.zip(cuts.tail).map { case (from, to) => events.slice(from, to).toSeq }
        val restartAfter = rng.nextInt(math.max(1, batches.size - 1))
        val actions = batches.zipWithIndex.flatMap { case (batch, i) =>
          val add = MultiAddData(sources.indices.map(s => sources(s) -> batch.collect { case (`s`, e) => e }): _*)
          if (i == restartAfter && i < batches.size - 1) Seq(add, ProcessAllAvailable(), StopStream, StartStream())
          else Seq(add)
        }
        val rows = sources.indices.map(s => events.toSeq.collect { case (`s`, XY(Some(x), Some(y), false)) => x -> y })
        val joined = query(declared(0)._2, declared(1)._2, declared(2)._2)
        withClue(s"case $caseNo: ${events.mkString(", ")}") {
          testStream(joined)(actions ++ Seq(CheckAnswer(expected(rows): _*), AssertEmpty): _*)
        }
      }
    }
  }

  test("random interleavings of a star on one key: output = the batch join, no state left") {
    randomInterleavings(2006, Seq((true, false), (true, false), (true, false)),
      (a, b, c) => a.join(b, a("a_x") === b("b_x")).join(c, a("a_x") === c("c_x"))
        .select(a("a_x"), a("a_y"), b("b_y"), c("c_y")),
      rows => for ((k, ay) <- rows(0); (kb, by) <- rows(1) if kb == k; (kc, cy) <- rows(2) if kc == k)
        yield (k, ay, by, cy))
  }

  test("random interleavings of the chain a(k) ⋈ b(k, v) ⋈ c(v): output = the batch join, no state left") {
    randomInterleavings(2007, Seq((true, false), (true, true), (true, false)),
      (a, b, c) => a.join(b, a("a_x") === b("b_x")).join(c, b("b_y") === c("c_x"))
        .select(a("a_x"), b("b_y"), a("a_y"), c("c_y")),
      rows => for ((k, ay) <- rows(0); (kb, v) <- rows(1) if kb == k; (vc, cy) <- rows(2) if vc == v)
        yield (k, v, ay, cy))
  }

  test("five inputs in a chain a(k1) ⋈ b(k1, k2) ⋈ c(k2, k3) ⋈ d(k3, k4) ⋈ e(k4), 4 partitions") {
    withPartitions(4) {
      val (a, da) = stream("a", "a1", "a_w", "a1")
      val (b, db) = stream("b", "b1", "b2", "b1; b2")
      val (c, dc) = stream("c", "c2", "c3", "c2; c3")
      val (d, dd) = stream("d", "d3", "d4", "d3; d4")
      val (e, de) = stream("e", "e4", "e_w", "e4")
      val joined = da.join(db, da("a1") === db("b1")).join(dc, db("b2") === dc("c2"))
        .join(dd, dc("c3") === dd("d3")).join(de, dd("d4") === de("e4"))
        .select(da("a1"), db("b2"), dc("c3"), dd("d4"), da("a_w"), de("e_w"))
      testStream(joined)(
        AddData(a, xy(1, 100)), AddData(b, xy(1, 2)), AddData(c, xy(2, 3)), AddData(d, xy(3, 4)),
        AddData(e, xy(4, 500), xy(5, 501)),
        CheckNewAnswer((1L, 2L, 3L, 4L, 100L, 500L)),
        AssertMultiJoin(Seq(0, 1, 2, 3, 4, 4), Nil),
        StopStream,
        StartStream(),
        AddData(b, onX(1)), AddData(c, onX(2)), AddData(d, onX(3)), AddData(e, onX(4)),
        CheckNewAnswer(),
        AssertMultiJoin(Seq(1, 2, 3, 4, 4), Seq(1 -> "b1", 2 -> "c2", 3 -> "d3", 4 -> "e4")),   // a(1) is gone
        AddData(a, onX(1)), AddData(b, onY(2)), AddData(c, onY(3)), AddData(d, onY(4), onY(5)),
        AddData(e, onX(5)),
        CheckNewAnswer(),
        AssertEmpty)
    }
  }
}

/** [[MultiWayJoinSuite]] on RocksDB state stores (fewer random cases). */
class MultiWayJoinRocksDBSuite extends MultiWayJoinSuite with OnRocksDB {
  override protected def randomCases: Int = 3
  override protected def partitionCounts: Seq[Int] = Seq(4)
}
