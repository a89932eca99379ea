package punctuated.join.multi

import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Plan migration inside the multi-way join ([[MultiJoinMigration]]): a query restarted from
 * its checkpoint under another `spark.punctuated.join.plan` continues with the state it has,
 * switching plan at its first batch (nodes of the new plan only completed from their
 * children's states, nodes of the old plan only emptied). Scripted runs of a chain of three
 * and a chain of four inputs go through several plans (MJoin → tree → another tree → MJoin →
 * back to the first tree, whose store must start empty again), over 1 and 4 partitions:
 * after every batch the output is the batch join of the rows so far, exactly once; each
 * restart under another plan counts one migration; at the end (one partition) no state is
 * left — the switch back to a plan's node finds its storage emptied. A cycle of three whose
 * streams each declare one scheme of two ranges (`x<=, y<=`) migrates the same way, under every
 * strategy: its nodes are completed and emptied by staircases of corners.
 * [[MultiJoinMigrationRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinMigrationSuite extends PunctuatedStreamTest with XYRows {
  import testImplicits._


  private def stream(name: String, schemes: Seq[String], twoRange: Boolean): (MemoryStream[XY], DataFrame) = {
    val s = MemoryStream[XY]
    val text = if (twoRange) s"${name}_x<=, ${name}_y<=" else schemes.map(c => s"${name}_$c").mkString("; ")
    (s, declare(s.toDF().selectExpr(s"x AS ${name}_x", s"y AS ${name}_y", s"p AS ${name}_p"), name,
      Schemes -> text, Marker -> s"${name}_p"))
  }

  /**
   * The last batch's migrations, the plan in force (as text over input numbers), and optionally its state.
   * Incomplete nodes: none under `moving_state`, the MJoin or once everything is punctuated; under `jisc`
   * at most one per node of the plan and cell (lazy completion, [[MultiJoinCompletion]]). `empty`: no rows
   * left, and no punctuations held unless `heldLeft` (range punctuations stay held, their bounds for good).
   */
  private def AssertPlan(plan: MultiJoinPlan.Join, migrations: Long, empty: Boolean = false,
      lazyNodes: Option[Long] = None, heldLeft: Boolean = false) =
    AssertOnQuery(s"plan ${plan.text(_.toString)}, $migrations migration(s)${if (empty) ", no state" else ""}") { q =>
      val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
      assert(ops.map(_.operatorName).toSeq == Seq("punctuatedMultiJoin"), settledProgress(q).json)
      assert(ops.head.customMetrics.get(MultiJoinMigration.NumMigrations) == migrations, settledProgress(q).json)
      val incomplete = ops.head.customMetrics.get(MultiJoinMigration.NumIncompleteStates)
      lazyNodes match {
        case Some(most) if !empty => assert(incomplete >= 0L && incomplete <= most, settledProgress(q).json)
        case _ => assert(incomplete == 0L, settledProgress(q).json)
      }
      val m = q.lastExecution.executedPlan.collect { case m: PunctuatedMultiJoinExec => m }.head
      assert(m.joinPlan == plan.canonical, m.joinPlan)
      assert(m.simpleString(10).contains(s"plan=${plan.canonical.asInstanceOf[MultiJoinPlan.Join].text(_.toString)}"),
        m.simpleString(10))
      if (empty) {
        assert(ops.head.numRowsTotal == 0, settledProgress(q).json)
        if (!heldLeft) assert(ops.head.customMetrics.get("numPunctuationsHeld") == 0L, settledProgress(q).json)
      }
      true
    }

  /**
   * A scripted run of declared streams `names` through `plans` (one per segment of batches;
   * the first run starts with `plans.head`, each later segment restarts from the checkpoint
   * with its plan), two batches per segment, then every value punctuated.
   *
   * @param joins the equalities, as ((stream, column), (stream, column)), column 0 = x, 1 = y
   * @param twoRange every stream declares one scheme of two ranges, `x<=, y<=`, instead of `schemes`:
   *                 a punctuation `(cx, cy)` closes the rows with x <= cx and y <= cy (a staircase of
   *                 corners, Tucker et al. 2003, §3); values 1-3, every stream's `(3, 3)` at the end
   */
  private def migrating(names: Seq[String], schemes: Seq[Seq[String]], joins: Seq[((Int, Int), (Int, Int))],
      plans: Seq[String], partitions: Int, seed: Int, strategy: String, twoRange: Boolean = false): Unit = withTempDir { dir =>
    val n = names.size
    val declared = names.zip(schemes).map { case (name, s) => stream(name, s, twoRange) }
    val dfs = declared.map(_._2)
    def col(s: Int, c: Int) = dfs(s)(s"${names(s)}_${if (c == 0) "x" else "y"}")
    val joined = (1 until n).foldLeft(dfs(0)) { (acc, j) =>
      val conds = joins.collect { case ((s1, c1), (s2, c2)) if math.max(s1, s2) == j => col(s1, c1) === col(s2, c2) }
      acc.join(dfs(j), conds.reduce(_ && _))
    }.select((0 until n).flatMap(s => Seq(col(s, 0), col(s, 1))): _*)
    // grammatical events: a punctuated column's value is only sent before its punctuation
    val rng = new Random(seed)
    val open = schemes.map(s => Seq(0, 1).map(c => c -> (if (s.contains(Seq("x", "y")(c))) Set(1L, 2L, 3L) else Set.empty[Long])))
      .map(m => scala.collection.mutable.Map(m: _*))
    val segments = plans.size
    val events = scala.collection.mutable.ArrayBuffer.empty[(Int, XY)]
    for (i <- 0 until 12 * n * segments) {
      val s = rng.nextInt(n)
      val punctuated = Seq(0, 1).map(c => schemes(s).contains(Seq("x", "y")(c)))
      def value(c: Int): Option[Long] =
        if (punctuated(c)) { val o = open(s)(c).toSeq.sorted; if (o.isEmpty) None else Some(o(rng.nextInt(o.size))) }
        else Some(if (joins.exists(j => j._1 == (s, c) || j._2 == (s, c))) 1L + rng.nextInt(3) else 100L + i)
      if (rng.nextInt(8) == 0 && i > 8 * n) {
        val cs = Seq(0, 1).filter(c => open(s)(c).nonEmpty)
        if (cs.nonEmpty) {
          val c = cs(rng.nextInt(cs.size)); val v = open(s)(c).min
          open(s)(c) = open(s)(c) - v
          events += s -> (if (c == 0) onX(v) else onY(v))
        }
      } else (value(0), value(1)) match {
        case (Some(x), Some(y)) => events += s -> xy(x, y)
        case _ =>
      }
    }
    if (twoRange) {
      // a row is never under a corner its stream sent before it (grammatical events)
      events.clear()
      val corners = Array.fill(n)(List.empty[(Long, Long)])
      for (i <- 0 until 12 * n * segments) {
        val s = rng.nextInt(n)
        val (x, y) = (1L + rng.nextInt(3), 1L + rng.nextInt(3))
        if (rng.nextInt(8) == 0 && i > 8 * n) { corners(s) ::= (x, y); events += s -> XY(Some(x), Some(y), p = true) }
        else if (!corners(s).exists { case (cx, cy) => x <= cx && y <= cy }) events += s -> xy(x, y)
      }
    }
    val perBatch = events.size / (2 * segments)
    val last = if (twoRange) (0 until n).map(s => s -> XY(Some(3L), Some(3L), p = true))
      else (0 until n).flatMap(s => Seq(0, 1).flatMap(c => open(s)(c).toSeq.sorted.map(v => s -> (if (c == 0) onX(v) else onY(v)))))
    val batches = (0 until 2 * segments).map(b => events.slice(b * perBatch,
      if (b == 2 * segments - 1) events.size else (b + 1) * perBatch).toSeq) :+ last
    def answer(upTo: Int): Seq[Row] = {
      val rows = (0 until n).map(s => batches.take(upTo).flatten.collect { case (`s`, XY(Some(x), Some(y), false)) => Seq(x, y) })
      (0 until n).foldLeft(Seq(Seq.empty[Seq[Long]])) { (acc, s) =>
        for (partial <- acc; r <- rows(s) if joins.forall { case ((s1, c1), (s2, c2)) =>
          if (s1 == s && s2 < s) r(c1) == partial(s2)(c2) else if (s2 == s && s1 < s) r(c2) == partial(s1)(c1) else true
        }) yield partial :+ r
      }.map(ps => Row.fromSeq(ps.flatten))
    }
    def tree(p: String) = if (p == "mjoin") MultiJoinPlan.mjoin(n) else MultiJoinPlan.parse(p, names)
    val checkpoint = dir.getCanonicalPath
    val actions = batches.indices.flatMap { b =>
      val segment = math.min(b / 2, segments - 1)
      val add = MultiAddData(declared.indices.map(s => declared(s)._1 -> batches(b).collect { case (`s`, e) => e }): _*)
      val restart = b > 0 && b % 2 == 0 && b / 2 < segments
      val migrations = if (restart && tree(plans(segment)).canonical != tree(plans(segment - 1)).canonical) 1L else 0L
      // under parallel_track: the current plan's nodes, in cells still running the old plan beside it
      val lazyNodes = if (strategy == "jisc" || strategy == "parallel_track") Some(MultiJoinPlan.intermediates(tree(plans(segment))).size.toLong * partitions)
        else None
      (if (restart) Seq(StopStream, StartStream(checkpointLocation = checkpoint,
        additionalConfs = Map(PunctuatedConf.JoinPlan -> plans(segment)))) else Nil) ++
        // no state left at the end (every cell)
        Seq(add, CheckAnswer(answer(b + 1): _*), AssertPlan(tree(plans(segment)), migrations,
          empty = b == batches.size - 1, lazyNodes, heldLeft = twoRange))
    }
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString, PunctuatedConf.SafetyMode -> "warn",
      PunctuatedConf.MigrationStrategy -> strategy, PunctuatedConf.JoinPlan -> plans.head) {
      withClue(s"plans ${plans.mkString(" -> ")}, $partitions partitions, events ${events.mkString(", ")}: ") {
        testStream(joined)((StartStream(checkpointLocation = checkpoint) +: actions): _*)
      }
    }
  }

  private val chain3 = (Seq("a", "b", "c"), Seq(Seq("x"), Seq("x", "y"), Seq("x")),
    Seq((0, 0) -> (1, 0), (1, 1) -> (2, 0)))
  private val chain4 = (Seq("a", "b", "c", "d"), Seq(Seq("x"), Seq("x", "y"), Seq("x", "y"), Seq("x")),
    Seq((0, 0) -> (1, 0), (1, 1) -> (2, 0), (2, 1) -> (3, 0)))

  /** (strategy, partitions) runs of the chain of three, and of the chain of four. */
  protected def runs: Seq[(String, Int)] = Seq("moving_state" -> 1, "moving_state" -> 4, "jisc" -> 4,
    "parallel_track" -> 1, "parallel_track" -> 4)
  protected def runs4: Seq[(String, Int)] = Seq("moving_state" -> 1, "jisc" -> 4, "parallel_track" -> 4)

  for ((strategy, partitions) <- runs) {
    test(s"chain of three: mjoin -> left-deep -> right-deep -> mjoin -> left-deep, $strategy, $partitions partitions") {
      val (names, schemes, joins) = chain3
      migrating(names, schemes, joins, Seq("mjoin", "((a ⋈ b) ⋈ c)", "(a ⋈ (b ⋈ c))", "mjoin", "((a ⋈ b) ⋈ c)"),
        partitions, seed = 7 + partitions, strategy)
    }
  }
  /** (strategy, partitions) runs of a cycle of three on (x, y) whose streams declare `x<=, y<=`. */
  protected def twoRangeRuns: Seq[(String, Int)] = Seq("moving_state" -> 1, "jisc" -> 4, "parallel_track" -> 4)

  for ((strategy, partitions) <- twoRangeRuns) {
    test(s"two-range schemes, a cycle of three on (x, y): mjoin -> left-deep -> right-deep -> mjoin, $strategy, $partitions partitions") {
      val joins = Seq((0, 0) -> (1, 0), (0, 1) -> (1, 1), (1, 0) -> (2, 0), (1, 1) -> (2, 1))
      migrating(Seq("a", "b", "c"), Seq(Nil, Nil, Nil), joins, Seq("mjoin", "((a ⋈ b) ⋈ c)", "(a ⋈ (b ⋈ c))", "mjoin"),
        partitions, seed = 19 + partitions, strategy, twoRange = true)
    }
  }

  for ((strategy, partitions) <- runs4) {
    test(s"chain of four: left-deep -> bushy -> mjoin -> right-deep, $strategy, $partitions partitions") {
      val (names, schemes, joins) = chain4
      migrating(names, schemes, joins, Seq("(((a ⋈ b) ⋈ c) ⋈ d)", "((a ⋈ b) ⋈ (c ⋈ d))", "mjoin", "(a ⋈ (b ⋈ (c ⋈ d)))"),
        partitions, seed = 11 + partitions, strategy)
    }
  }
}

/** [[MultiJoinMigrationSuite]] on RocksDB state stores. */
class MultiJoinMigrationRocksDBSuite extends MultiJoinMigrationSuite with OnRocksDB {
  // parallel_track: MultiJoinParallelTrackRocksDBSuite; moving_state: MultiJoinPropertyRocksDBSuite
  override protected def runs: Seq[(String, Int)] = Seq("jisc" -> 4)
  override protected def runs4: Seq[(String, Int)] = Nil
  override protected def twoRangeRuns: Seq[(String, Int)] = Seq("jisc" -> 4)
}
