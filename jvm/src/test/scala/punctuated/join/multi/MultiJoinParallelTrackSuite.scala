package punctuated.join.multi

import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * The `parallel_track` migration strategy ([[ParallelTrack]]): a query restarted under another
 * plan runs the old plan beside the new one until punctuations have purged every row stored
 * before the switch, then drops it. Scripted runs of a chain of three (the old plan's node
 * {a, b} is not the new plan's, {b, c} new) and of four (node {a, b} shared: its new-rows copy
 * replaces it when the old plan goes), over 1 and 4 partitions:
 *  - batches 0, 1 under the first plan, join values 1 and 2 (the old rows);
 *  - restart under the second plan: batch 2 switches (one migration; a cell with old rows
 *    runs the old plan beside the new one: `numParallelPlans` > 0); rows of values 1 and 2
 *    (joining old rows: their results come from the old plan, those of new rows only from
 *    the new one) and rows of value 3 (new rows only);
 *  - restart in the middle of the migration: batch 3 continues it (the old plan from the state);
 *  - batch 4 punctuates 1 and 2 everywhere: every old row is purged, the old plan is dropped
 *    in every cell (`numParallelPlans` 0, `numIncompleteStates` 0), the rows of value 3 stay;
 *  - batch 5: values 3 and 4, joining those under the new plan alone (its nodes, and a shared
 *    node's copy moved into the node); batch 6 punctuates 3 and 4: no state left.
 * After every batch the output is the batch join of the rows so far, exactly once.
 * [[MultiJoinParallelTrackRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinParallelTrackSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def stream(name: String, schemes: Seq[String]): (MemoryStream[XY], DataFrame) = {
    val s = MemoryStream[XY]
    (s, declare(s.toDF().selectExpr(s"x AS ${name}_x", s"y AS ${name}_y", s"p AS ${name}_p"), name,
      Schemes -> schemes.map(c => s"${name}_$c").mkString("; "), Marker -> s"${name}_p"))
  }

  /** The migration metrics of the last batch: migrations, cells running an old plan (at least / exactly), incomplete. */
  private def AssertParallel(migrations: Long, parallel: Long => Boolean, what: String, empty: Boolean = false) =
    AssertOnQuery(s"$migrations migration(s), old plans $what${if (empty) ", no state" else ""}") { q =>
      val p = settledProgress(q)
      val op = p.stateOperators.filter(_.operatorName == "punctuatedMultiJoin").head
      assert(op.customMetrics.get(MultiJoinMigration.NumMigrations) == migrations, p.json)
      val plans = op.customMetrics.get(MultiJoinMigration.NumParallelPlans)
      assert(parallel(plans), s"$plans old plans, expected $what: ${p.json}")
      if (plans == 0L) assert(op.customMetrics.get(MultiJoinMigration.NumIncompleteStates) == 0L, p.json)
      if (empty) {
        assert(op.numRowsTotal == 0, p.json)
        assert(op.customMetrics.get("numPunctuationsHeld") == 0L, p.json)
      }
      true
    }

  /**
   * The scripted run (see the class doc) of the chain `names` (input s's column y joins input
   * s + 1's column x; `schemes(s)`: the columns input s punctuates) from `first` to `second`.
   */
  private def parallelTrack(names: Seq[String], schemes: Seq[Seq[String]], first: String, second: String,
      partitions: Int, seed: Int, jiscFirst: Option[String] = None): Unit = withTempDir { dir =>
    val n = names.size
    val declared = names.zip(schemes).map { case (name, s) => stream(name, s) }
    val dfs = declared.map(_._2)
    def col(s: Int, c: String) = dfs(s)(s"${names(s)}_$c")
    val joined = (1 until n).foldLeft(dfs(0)) { (acc, j) =>
      acc.join(dfs(j), if (j == 1) col(0, "x") === col(1, "x") else col(j - 1, "y") === col(j, "x"))
    }.select((0 until n).flatMap(s => Seq(col(s, "x"), col(s, "y"))): _*)
    /** Is column y of input s a join column? (x always is) */
    def joinsY(s: Int) = s > 0 && s < n - 1
    val rng = new Random(seed)
    var unique = 100L
    // each row draws its join values from one of the groups: a row of group {3} never joins one of {1, 2}
    def rows(groups: Seq[Long]*): Seq[(Int, XY)] = (0 until n).flatMap { s =>
      Seq.fill(3) {
        unique += 1
        val values = groups(rng.nextInt(groups.size))
        s -> XY(Some(values(rng.nextInt(values.size))), Some(if (joinsY(s)) values(rng.nextInt(values.size)) else unique))
      }
    }
    def punctuate(values: Seq[Long]): Seq[(Int, XY)] = for {
      s <- 0 until n; c <- schemes(s); v <- values
    } yield s -> (if (c == "x") XY(Some(v), None, p = true) else XY(None, Some(v), p = true))
    val batches = Seq(rows(Seq(1L, 2L)), rows(Seq(1L, 2L)), rows(Seq(1L, 2L), Seq(3L)), rows(Seq(1L, 2L), Seq(3L)),
      punctuate(Seq(1L, 2L)), rows(Seq(3L, 4L)), punctuate(Seq(3L, 4L)))
    def answer(upTo: Int): Seq[Row] = {
      val data = (0 until n).map(s => batches.take(upTo).flatten.collect { case (`s`, XY(Some(x), Some(y), false)) => (x, y) })
      (1 until n).foldLeft(data(0).map(Seq(_))) { (acc, j) =>
        for (partial <- acc; r <- data(j) if r._1 == (if (j == 1) partial(0)._1 else partial(j - 1)._2)) yield partial :+ r
      }.map(ps => Row.fromSeq(ps.flatMap(p => Seq(p._1, p._2))))
    }
    val checkpoint = dir.getCanonicalPath
    def add(b: Int) = MultiAddData(declared.indices.map(s => declared(s)._1 -> batches(b).collect { case (`s`, e) => e }): _*)
    def restart(plan: String) = Seq(StopStream, StartStream(checkpointLocation = checkpoint,
      additionalConfs = Map(PunctuatedConf.JoinPlan -> plan, PunctuatedConf.MigrationStrategy -> "parallel_track")))
    val running: Long => Boolean = if (partitions == 1) _ == 1L else p => p >= 1L && p <= partitions
    val actions = Seq(StartStream(checkpointLocation = checkpoint),
      add(0), CheckAnswer(answer(1): _*), AssertParallel(0, _ == 0L, "none")) ++
      // jiscFirst: batch 1 switches to it under jisc (its new nodes left incomplete, completed by the next switch)
      jiscFirst.toSeq.flatMap(p => Seq(StopStream, StartStream(checkpointLocation = checkpoint,
        additionalConfs = Map(PunctuatedConf.JoinPlan -> p, PunctuatedConf.MigrationStrategy -> "jisc")))) ++
      Seq(add(1), CheckAnswer(answer(2): _*)) ++
      jiscFirst.map(_ => AssertOnQuery("jisc left nodes incomplete") { q =>
        val op = settledProgress(q).stateOperators.filter(_.operatorName == "punctuatedMultiJoin").head
        assert(op.customMetrics.get(MultiJoinMigration.NumIncompleteStates) > 0L, settledProgress(q).json)
        true
      }).toSeq ++
      restart(second) ++ Seq(add(2), CheckAnswer(answer(3): _*), AssertParallel(1, running, "running")) ++
      restart(second) ++ Seq(add(3), CheckAnswer(answer(4): _*), AssertParallel(0, running, "running")) ++
      Seq(add(4), CheckAnswer(answer(5): _*), AssertParallel(0, _ == 0L, "dropped"),
        add(5), CheckAnswer(answer(6): _*), AssertParallel(0, _ == 0L, "none"),
        add(6), CheckAnswer(answer(7): _*), AssertParallel(0, _ == 0L, "none", empty = true))
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString, PunctuatedConf.SafetyMode -> "warn",
      PunctuatedConf.MigrationStrategy -> "parallel_track", PunctuatedConf.JoinPlan -> first) {
      withClue(s"$first -> $second, $partitions partitions, batches ${batches.mkString(", ")}: ") {
        testStream(joined)(actions: _*)
      }
    }
  }

  /** Partition counts each chain runs with. */
  protected def partitionCounts: Seq[Int] = Seq(1, 4)

  for (partitions <- partitionCounts) {
    test(s"chain of three: ((a ⋈ b) ⋈ c) -> (a ⋈ (b ⋈ c)), old plan dropped once punctuated, $partitions partitions") {
      parallelTrack(Seq("a", "b", "c"), Seq(Seq("x"), Seq("x", "y"), Seq("x")), "((a ⋈ b) ⋈ c)", "(a ⋈ (b ⋈ c))",
        partitions, seed = 3 + partitions)
    }
    test(s"chain of four: (((a ⋈ b) ⋈ c) ⋈ d) -> ((a ⋈ b) ⋈ (c ⋈ d)), shared node, $partitions partitions", NotOnRocksDB) {
      parallelTrack(Seq("a", "b", "c", "d"), Seq(Seq("x"), Seq("x", "y"), Seq("x", "y"), Seq("x")),
        "(((a ⋈ b) ⋈ c) ⋈ d)", "((a ⋈ b) ⋈ (c ⋈ d))", partitions, seed = 5 + partitions)
    }
  }
  test("chain of three: mjoin -> ((a ⋈ b) ⋈ c) and a tree -> mjoin, 1 partition") {
    parallelTrack(Seq("a", "b", "c"), Seq(Seq("x"), Seq("x", "y"), Seq("x")), "mjoin", "((a ⋈ b) ⋈ c)", 1, seed = 9)
    parallelTrack(Seq("a", "b", "c"), Seq(Seq("x"), Seq("x", "y"), Seq("x")), "(a ⋈ (b ⋈ c))", "mjoin", 1, seed = 10)
  }
  test("chain of four: a switch to parallel_track over an old plan jisc left incomplete completes it first, 4 partitions", NotOnRocksDB) {
    parallelTrack(Seq("a", "b", "c", "d"), Seq(Seq("x"), Seq("x", "y"), Seq("x", "y"), Seq("x")),
      "mjoin", "((a ⋈ b) ⋈ (c ⋈ d))", 4, seed = 12, jiscFirst = Some("(((a ⋈ b) ⋈ c) ⋈ d)"))
  }
}

/** [[MultiJoinParallelTrackSuite]] on RocksDB state stores. */
class MultiJoinParallelTrackRocksDBSuite extends MultiJoinParallelTrackSuite with OnRocksDB {
  override protected def partitionCounts: Seq[Int] = Seq(4)
}
