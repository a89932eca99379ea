package punctuated.join.multi

import org.apache.spark.sql.DataFrame
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.PunctuatedSymmetricHashJoinExec
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * Range schemes (`t<=`, `t>=`) on the join columns of a multi-way join: the group runs as one
 * [[PunctuatedMultiJoinExec]], and a range punctuation closes every value up to its bound in
 * the chained purge (Li et al. 2006, §3.2, with Tucker et al. 2003's range patterns): the
 * stored rows it can make purgeable are found in the other inputs' range indexes, late rows
 * are those its bound covers, and one bound per scheme and constants is held. Stopped and
 * restarted mid-stream; 1 and 4 partitions; [[MultiJoinRangeSchemesRocksDBSuite]] on RocksDB.
 *
 * {{{
 *   a(k) ⋈ b(k, t) ⋈ c(t);  a "a_k",  b "b_k; b_t<=",  c "c_t<="
 *   c says t<=6, b says k=1:  a(1) still joins a future c(8) through b(1, 8): kept
 *   c says t<=9:              every partial of a(1) is closed: a(1) purged
 * }}}
 */
class MultiJoinRangeSchemesSuite extends PunctuatedStreamTest with XYRows {
  import testImplicits._


  /** The query runs one multi-way join (no binary join) storing `rows` rows in all. */
  private def AssertRows(rows: Long) = AssertOnQuery(s"one multi-way join storing $rows rows") { q =>
    val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
    assert(ops.map(_.operatorName).toSeq == Seq("punctuatedMultiJoin"), settledProgress(q).json)
    assert(q.lastExecution.executedPlan.collect { case j: PunctuatedSymmetricHashJoinExec => j }.isEmpty)
    assert(ops.head.numRowsTotal == rows, settledProgress(q).json)
    true
  }

  /** The last batch's range-index entries (distinct stored keys, per indexed scheme, in all cells). */
  private def AssertIndexEntries(check: Long => Boolean, what: String) = AssertOnQuery(s"range index: $what") { q =>
    val op = settledProgress(q).stateOperators.find(_.operatorName == "punctuatedMultiJoin").get
    assert(check(op.customMetrics.get("numRangeIndexEntries")), settledProgress(q).json)
    true
  }

  /** The last batch's `numPurgeChecks`: the stored keys its chained purge checked, all cells. */
  private def AssertPurgeChecks(n: Long) = AssertOnQuery(s"$n keys checked by the last batch's purge") { q =>
    val op = settledProgress(q).stateOperators.find(_.operatorName == "punctuatedMultiJoin").get
    assert(op.customMetrics.get("numPurgeChecks") == n, settledProgress(q).json)
    true
  }

  private def chain(cScheme: String) = {
    val (a, da) = stream("a", "a_k", "a_w", "a_k")
    val (b, db) = stream("b", "b_k", "b_t", "b_k; b_t<=")
    val (c, dc) = stream("c", "c_t", "c_w", cScheme)
    (a, b, c, da.join(db, da("a_k") === db("b_k")).join(dc, db("b_t") === dc("c_t"))
      .select(da("a_k"), db("b_t"), da("a_w"), dc("c_w")))
  }

  for (partitions <- Seq(1, 4)) {
    test(s"chain a(k) ⋈ b(k, t) ⋈ c(t), c's t<= closes up to its bound, $partitions partition(s), strict", NotOnRocksDB) {
      withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString, PunctuatedConf.JoinPlan -> "mjoin",
          PunctuatedConf.SafetyMode -> "strict") {
        val (a, b, c, joined) = chain("c_t<=")
        // with 4 cells a row of b or c may be copied; with 1 every count is exact
        def rows(n: Long) = if (partitions == 1) AssertRows(n) else AssertIndexEntries(_ >= 0, "reported")
        testStream(joined)(
          AddData(a, xy(1, 10)), AddData(b, xy(1, 5)), AddData(b, xy(1, 8)),
          AddData(c, xy(5, 20)), AddData(c, xy(8, 21)),
          CheckNewAnswer((1L, 5L, 10L, 20L), (1L, 8L, 10L, 21L)),
          rows(5),
          AssertIndexEntries(_ > 0, "b's and c's keys are indexed for the range schemes"),
          // c closes t <= 6 and b closes k = 1: a(1) still joins a future c(8) through b(1, 8)
          AddData(c, onX(6)), AddData(b, onX(1)),
          CheckNewAnswer(),
          rows(5),
          StopStream,
          StartStream(),
          // c(4) is late (t <= 6); c(8) still joins a(1) and b(1, 8)
          AddData(c, xy(4, 22)), AddData(c, xy(8, 23)),
          CheckNewAnswer((1L, 8L, 10L, 23L)),
          AssertCounted("numLateRowsDropped", 1),
          rows(6),
          // c closes t <= 9: every partial of a(1) is closed, a(1) goes (found through the index)
          AddData(c, onX(9)),
          CheckNewAnswer(),
          rows(5),
          StopStream,
          StartStream(),
          // b closes t <= 9: c's rows have no future partner in b; a closes k = 1: b's rows go
          AddData(b, onY(9)), AddData(a, onX(1)),
          CheckNewAnswer(),
          AssertRows(0),
          AssertIndexEntries(_ == 0, "empty with the rows"))
      }
    }
  }

  test("a rising bound checks only the keys it newly covers, also after a restart") {
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1", PunctuatedConf.JoinPlan -> "mjoin",
        PunctuatedConf.SafetyMode -> "strict") {
      val (a, b, c, joined) = chain("c_t<=")
      // b(1, t) and c(t) for t = 1..8 wait on a, which has not closed k = 1
      testStream(joined)(
        AddData(b, (1L to 8L).map(xy(1, _)): _*), AddData(c, (1L to 8L).map(xy(_, 0)): _*),
        CheckNewAnswer(),
        // t <= 4: b's keys t = 1..4 (from c's range index) and the c keys they join: 8 checks, all kept
        AddData(c, onX(4)),
        CheckNewAnswer(),
        AssertPurgeChecks(8),
        AssertRows(16),
        StopStream,
        StartStream(),
        // t <= 6: only t = 5, 6 are new (the keys up to 4 were checked when t <= 4 came): 4 checks
        AddData(c, onX(6)),
        CheckNewAnswer(),
        AssertPurgeChecks(4),
        AddData(c, onX(6)),       // nothing new
        CheckNewAnswer(),
        AssertPurgeChecks(0),
        // a closes k = 1: every b row goes (reached by a's constant, whatever c's bound covered)
        AddData(a, onX(1)),
        CheckNewAnswer(),
        AssertRows(8),
        // b closes t <= 9: c's rows have no partner left
        AddData(b, onY(9)),
        CheckNewAnswer(),
        AssertRows(0))
    }
  }

  test("a >= range: c's t>=8 closes t = 8 and above, not t = 5") {
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1", PunctuatedConf.JoinPlan -> "mjoin",
        PunctuatedConf.SafetyMode -> "strict") {
      val (a, da) = stream("a", "a_k", "a_w", "a_k")
      val (b, db) = stream("b", "b_k", "b_t", "b_k; b_t>=")
      val (c, dc) = stream("c", "c_t", "c_w", "c_t>=")
      val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_t") === dc("c_t"))
        .select(da("a_k"), db("b_t"), da("a_w"), dc("c_w"))
      testStream(joined)(
        AddData(a, xy(1, 10)), AddData(b, xy(1, 5)), AddData(b, xy(1, 8)),
        CheckNewAnswer(),
        AddData(b, onX(1)), AddData(c, onX(8)),
        CheckNewAnswer(),
        AssertRows(2),           // b(1, 8) has no future partner in c; a(1) may still meet a c(5)
        AddData(c, xy(9, 1)), AddData(c, xy(5, 20)),     // c(9) is late, c(5) joins
        CheckNewAnswer((1L, 5L, 10L, 20L)),
        AssertCounted("numLateRowsDropped", 1),
        StopStream,
        StartStream(),
        AddData(c, onX(5)),      // t >= 5: everything b stores is closed: a(1) goes
        CheckNewAnswer(),
        AssertRows(2),           // b(1, 5) and c(5): a has not closed k = 1
        AddData(a, onX(1)), AddData(b, onY(5)),
        CheckNewAnswer(),
        AssertRows(0))
    }
  }
}

/** [[MultiJoinRangeSchemesSuite]] on RocksDB state stores. */
class MultiJoinRangeSchemesRocksDBSuite extends MultiJoinRangeSchemesSuite with OnRocksDB
