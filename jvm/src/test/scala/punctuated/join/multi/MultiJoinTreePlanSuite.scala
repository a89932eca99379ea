package punctuated.join.multi

import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.errors.PunctuatedAnalysisException
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * Tree plans inside the multi-way join (`spark.punctuated.join.plan` = a tree): left-deep
 * and bushy plans of a chain, a cycle, a star and five inputs, with intermediate state in
 * the nodes below the root. Each equals the batch join across stops and restarts over 1, 2,
 * 4 and 7 partitions, keeps the node stores its plan names, and drains to no state once
 * every value is punctuated; a restart under another tree continues, migrating to it. [[MultiJoinTreePlanRocksDBSuite]] runs the same on RocksDB (over 7 partitions).
 */
class MultiJoinTreePlanSuite extends PunctuatedStreamTest with XYRows {
  import testImplicits._


  /** A declared stream of two columns `<name>_x`, `<name>_y`; `schemes` among "x", "y". */
  private def stream(name: String, schemes: Seq[String]): (MemoryStream[XY], DataFrame) = {
    val s = MemoryStream[XY]
    (s, declare(s.toDF().selectExpr(s"x AS ${name}_x", s"y AS ${name}_y", s"p AS ${name}_p"), name,
      Schemes -> schemes.map(c => s"${name}_$c").mkString("; "), Marker -> s"${name}_p"))
  }

  /**
   * The partition counts each tree runs over (a def: the suite's constructor registers the tests).
   * RocksDB runs 4 only: the provider changes how stores keep rows, not how cells and partitions
   * meet, which 1 (every combination in one cell) and 7 (a prime: uneven shares) on the
   * HDFS-backed store cover (CI time: this suite was the JVM suites' longest).
   */
  protected def partitionCounts: Seq[Int] = Seq(1, 7)

  private def withPlan(plan: String, partitions: Int)(body: => Unit): Unit =
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString, PunctuatedConf.JoinPlan -> plan,
      PunctuatedConf.SafetyMode -> "warn")(withClue(s"$plan, $partitions partitions: ")(body))

  /** The multi-way join's total rows (inputs' and nodes') and held punctuations, and its node stores. */
  private def AssertState(rows: Option[Long], punctuations: Option[Long], nodeStores: Seq[String]) =
    AssertOnQuery(s"state: rows $rows, punctuations $punctuations, node stores $nodeStores") { q =>
      val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
      assert(ops.map(_.operatorName).toSeq == Seq("punctuatedMultiJoin"), settledProgress(q).json)
      rows.foreach(r => assert(ops.head.numRowsTotal == r, settledProgress(q).json))
      punctuations.foreach(p => assert(ops.head.customMetrics.get("numPunctuationsHeld") == p, settledProgress(q).json))
      val m = q.lastExecution.executedPlan.collect { case m: PunctuatedMultiJoinExec => m }.head
      assert(m.stateStoreNames.filter(_.startsWith("inputs-")) == nodeStores, m.stateStoreNames)
      true
    }

  private def AssertEmpty(nodeStores: Seq[String]) = AssertState(Some(0), Some(0), nodeStores)

  for (partitions <- partitionCounts) {
    test(s"chain a(k) ⋈ b(k, v) ⋈ c(v), left-deep ((a ⋈ b) ⋈ c) and (a ⋈ (b ⋈ c)), $partitions partitions", NotOnRocksDB) {
      // (plan, node store, node rows after each step at one partition)
      for ((plan, node, counts) <- Seq(("((a ⋈ b) ⋈ c)", "inputs-0-1-mjoin-rows", Seq(2, 1, 0)),
          ("(a ⋈ (b ⋈ c))", "inputs-1-2-mjoin-rows", Seq(2, 2, 2)))) withPlan(plan, partitions) {
        val (a, da) = stream("a", Seq("x"))
        val (b, db) = stream("b", Seq("x", "y"))
        val (c, dc) = stream("c", Seq("x"))
        val joined = da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x"))
          .select(da("a_x"), db("b_y"), da("a_y"), dc("c_y"))
        def rows(leaves: Int, step: Int) = if (partitions == 1) Some((leaves + counts(step)).toLong) else None
        testStream(joined)(
          AddData(a, xy(1, 10)), AddData(b, xy(1, 7)), AddData(c, xy(7, 20)),
          CheckNewAnswer((1L, 7L, 10L, 20L)),
          AddData(b, xy(1, 8)), AddData(c, xy(8, 21)),
          CheckNewAnswer((1L, 8L, 10L, 21L)),
          AssertState(rows(5, 0), None, Seq(node)),
          StopStream,
          StartStream(),
          // b closes k = 1, c closes v = 7: the combination {a, b} with v = 7 goes (c closed it)
          AddData(b, onX(1)), AddData(c, onX(7)),
          CheckNewAnswer(),
          AssertState(rows(5, 1), None, Seq(node)),
          AddData(c, onX(8)),
          CheckNewAnswer(),
          AssertState(rows(4, 2), None, Seq(node)),                 // a(1) is gone
          StopStream,
          StartStream(),
          // a's new row meets the stored rows and is not stored (nor its combinations); c(7) is late
          AddData(a, xy(1, 11)), AddData(c, xy(7, 99)),
          CheckNewAnswer((1L, 7L, 11L, 20L), (1L, 8L, 11L, 21L)),
          AssertState(rows(4, 2), None, Seq(node)),
          AddData(a, onX(1)), AddData(b, onY(7)), AddData(b, onY(8)),
          CheckNewAnswer(),
          AssertEmpty(Seq(node)))
      }
    }
  }

  /**
   * A scripted run of `n` declared streams: `events` in batches cut at fixed places, a stop
   * and restart after the second batch, every remaining value punctuated at the end; after
   * every batch the output is the batch join of the rows so far; at the end no state.
   *
   * @param schemes  per stream, its punctuated columns ("x", "y")
   * @param joins    the equalities, as ((stream, column), (stream, column)), column 0 = x, 1 = y
   */
  private def scripted(names: Seq[String], schemes: Seq[Seq[String]], joins: Seq[((Int, Int), (Int, Int))],
      plan: String, nodeStores: Seq[String], partitions: Int, seed: Int): Unit = withPlan(plan, partitions) {
    val n = names.size
    val declared = names.zip(schemes).map { case (name, s) => stream(name, s) }
    val dfs = declared.map(_._2)
    def col(s: Int, c: Int) = dfs(s)(s"${names(s)}_${if (c == 0) "x" else "y"}")
    // written as a left-deep tree in stream order, each join with its equalities to earlier streams
    val joined = (1 until n).foldLeft(dfs(0)) { (acc, j) =>
      val conds = joins.collect {
        case ((s1, c1), (s2, c2)) if math.max(s1, s2) == j => col(s1, c1) === col(s2, c2)
      }
      acc.join(dfs(j), conds.reduce(_ && _))
    }.select((0 until n).flatMap(s => Seq(col(s, 0), col(s, 1))): _*)
    // grammatical events: a punctuated column's value is only sent before its punctuation
    val rng = new Random(seed)
    val open = schemes.map(s => (Seq(0, 1).map(c => c -> (if (s.contains(Seq("x", "y")(c))) Set(1L, 2L) else Set.empty[Long])).toMap))
      .map(m => scala.collection.mutable.Map(m.toSeq: _*))
    val events = scala.collection.mutable.ArrayBuffer.empty[(Int, XY)]
    for (i <- 0 until 20 * n) {
      val s = rng.nextInt(n)
      val punctuated = Seq(0, 1).map(c => schemes(s).contains(Seq("x", "y")(c)))
      def value(c: Int): Option[Long] =
        if (punctuated(c)) { val o = open(s)(c).toSeq.sorted; if (o.isEmpty) None else Some(o(rng.nextInt(o.size))) }
        else Some(if (joins.exists(j => j._1 == (s, c) || j._2 == (s, c))) 1L + rng.nextInt(2) else 100L + i)
      if (rng.nextInt(6) == 0 && i > 5 * n) {
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
    val cuts = Seq(0, events.size / 4, events.size / 2, 3 * events.size / 4, events.size)
    val batches = cuts.zip(cuts.tail).map { case (f, t) => events.slice(f, t).toSeq } :+
      (0 until n).flatMap(s => Seq(0, 1).flatMap(c => open(s)(c).toSeq.sorted.map(v => s -> (if (c == 0) onX(v) else onY(v)))))
    def answer(upTo: Int): Seq[Row] = {
      val rows = (0 until n).map(s => batches.take(upTo).flatten.collect { case (`s`, XY(Some(x), Some(y), false)) => Seq(x, y) })
      (0 until n).foldLeft(Seq(Seq.empty[Seq[Long]])) { (acc, s) =>
        for (partial <- acc; r <- rows(s) if joins.forall { case ((s1, c1), (s2, c2)) =>
          if (s1 == s && s2 < s) r(c1) == partial(s2)(c2) else if (s2 == s && s1 < s) r(c2) == partial(s1)(c1) else true
        }) yield partial :+ r
      }.map(ps => Row.fromSeq(ps.flatten))
    }
    val actions = batches.indices.flatMap { b =>
      val add = MultiAddData(declared.indices.map(s => declared(s)._1 -> batches(b).collect { case (`s`, e) => e }): _*)
      (if (b == 2) Seq(StopStream, StartStream()) else Nil) ++
        Seq(add, CheckAnswer(answer(b + 1): _*), AssertState(None, None, nodeStores))
    } :+ AssertEmpty(nodeStores)
    withClue(s"events ${events.mkString(", ")}: ") { testStream(joined)(actions: _*) }
  }

  private val cycle = (Seq("a", "b", "c"), Seq(Seq("x", "y"), Seq("x", "y"), Seq("x", "y")),
    Seq((0, 1) -> (1, 0), (1, 1) -> (2, 0), (2, 1) -> (0, 0)))
  private val star = (Seq("a", "b", "c", "d"), Seq(Seq("x"), Seq("x"), Seq("x"), Seq("x")),
    Seq((0, 0) -> (1, 0), (0, 0) -> (2, 0), (0, 0) -> (3, 0)))
  private val five = (Seq("a", "b", "c", "d", "e"), Seq(Seq("x"), Seq("x", "y"), Seq("x", "y"), Seq("x", "y"), Seq("x")),
    Seq((0, 0) -> (1, 0), (1, 1) -> (2, 0), (2, 1) -> (3, 0), (3, 1) -> (4, 0)))

  private val runs = Seq(
    ("cycle, left-deep", cycle, "((a ⋈ c) ⋈ b)", Seq("inputs-0-2-mjoin-rows")),
    ("star on one key, bushy", star, "((a ⋈ b) ⋈ (c ⋈ d))", Seq("inputs-0-1-mjoin-rows", "inputs-2-3-mjoin-rows")),
    ("star on one key, left-deep", star, "(((d ⋈ c) ⋈ b) ⋈ a)", Seq("inputs-2-3-mjoin-rows", "inputs-1-2-3-mjoin-rows")),
    ("five inputs in a chain, bushy", five, "(((a ⋈ b) ⋈ c) ⋈ (d ⋈ e))",
      Seq("inputs-0-1-mjoin-rows", "inputs-0-1-2-mjoin-rows", "inputs-3-4-mjoin-rows")),
    ("five inputs in a chain, bushy MJoin root", five, "((a ⋈ b) ⋈ c ⋈ (d ⋈ e))",
      Seq("inputs-0-1-mjoin-rows", "inputs-3-4-mjoin-rows")))

  for ((name, (names, schemes, joins), plan, stores) <- runs; partitions <- partitionCounts) {
    test(s"$name $plan, $partitions partitions: the batch join across a restart, no state left") {
      scripted(names, schemes, joins, plan, stores, partitions, seed = 31 * partitions + name.length)
    }
  }

  test("a restart under another tree continues the state, migrating to it (MultiJoinMigrationSuite for more)") {
    withTempDir { dir =>
      val checkpoint = dir.getCanonicalPath
      val (a, da) = stream("a", Seq("x"))
      val (b, db) = stream("b", Seq("x", "y"))
      val (c, dc) = stream("c", Seq("x"))
      val joined = da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x"))
        .select(da("a_x"), db("b_y"), da("a_y"), dc("c_y"))
      withPlan("((a ⋈ b) ⋈ c)", 2) {
        testStream(joined)(
          StartStream(checkpointLocation = checkpoint),
          AddData(a, xy(1, 10)), AddData(b, xy(1, 7)),
          CheckNewAnswer(),
          StopStream)
      }
      // another tree, the MJoin, and the first tree spelled otherwise each continue it
      for ((other, v) <- Seq("(a ⋈ (b ⋈ c))" -> 20L, "mjoin" -> 21L, "(c ⋈ (b ⋈ a))" -> 22L)) withPlan(other, 2) {
        testStream(joined)(
          StartStream(checkpointLocation = checkpoint),
          AddData(c, xy(7, v)),
          CheckNewAnswer((1L, 7L, 10L, v)),
          // the checkpoint's stores stay those of its first plan
          AssertState(None, None, Seq("inputs-0-1-mjoin-rows")),
          StopStream)
      }
    }
  }

  test("a tree that does not fit the group fails at planning, naming the setting, the text and the inputs", NotOnRocksDB) {
    for ((plan, why) <- Seq("((a ⋈ b) ⋈ d)" -> "'d' is not one of its inputs",
        "((a ⋈ c) ⋈ b)" -> "share no join column")) withPlan(plan, 1) {
      val (a, da) = stream("a", Seq("x"))
      val (b, db) = stream("b", Seq("x", "y"))
      val (c, dc) = stream("c", Seq("x"))
      val joined = da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x"))
      val e = intercept[Throwable](testStream(joined)(AddData(a, xy(1, 10)), ProcessAllAvailable()))
      val m = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" / ")
      assert(m.contains(s"spark.punctuated.join.plan='$plan'") && m.contains("a, b, c") && m.contains(why), m)
    }
  }
}
/** [[MultiJoinTreePlanSuite]] on RocksDB state stores. */
class MultiJoinTreePlanRocksDBSuite extends MultiJoinTreePlanSuite with OnRocksDB {
  override protected def partitionCounts: Seq[Int] = Seq(4)
}
