package punctuated.join.multi

import scala.util.Random

import org.apache.spark.sql.{Column, DataFrame, Row}
import punctuated.compat.{MemoryStream, StreamingQueryWrapper}
import org.apache.spark.sql.internal.SQLConf

import punctuated.checkpoint.MigrationRequests
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of the multi-way join: random queries of 3–5 inputs over 1–3 join columns
 * besides the case column (chains, a cycle, a star, random connected shapes) with random
 * schemes that Li et al. 2006 (Theorems 2 and 4) call safe, fed random grammatical
 * interleavings of rows and punctuations (plus rows their own earlier punctuations make late).
 * After every micro-batch, against [[MultiJoinModel]] (the rules applied literally):
 *
 *  (a) the output so far is exactly the batch inner join of all non-late rows so far, each
 *      result once (also across a stop and restart from the checkpoint);
 *  (b) the one `punctuatedMultiJoin` entry of `stateOperators` stores exactly the rows the
 *      chained purge (Li et al. 2006, §3.2, generalized in §4.2) cannot drop (maximal purge:
 *      `numRowsTotal`), holds exactly the punctuations the release rule keeps
 *      (`numPunctuationsHeld`) and dropped the batch's late rows (`numLateRowsDropped`);
 *  (c) once every input has punctuated every value of every scheme, no row is left (the
 *      schemes are safe); then some inputs close each case (the other inputs' punctuations of
 *      the case go only where every other input has closed it), and once every input has
 *      closed every case, nothing is left.
 *
 * Many independent cases run in one query: every input has a case column `c`, every join
 * predicate includes equalities on it, and every scheme binds it (each input also declares
 * the scheme on `c` alone, used only to close a whole case), so cases never interact. As `c`
 * is the one class every input has, the hypercube gives it every share: each case lives in one
 * cell, and the counts need no replication factor. With `spark.punctuated.join.plan=written`
 * (a tree of binary joins) only (a) is asserted: its state differs by design.
 *
 * Every run also runs under a tree plan picked at random (a random left-deep or bushy tree;
 * every tree is connected, as every input has the case column): (b) then counts the
 * intermediate nodes' combinations too, as [[MultiJoinModel.nodeRows]] predicts them — the
 * combinations of the model's stored rows that the closure started from the node's inputs
 * cannot purge — and the model asserts that no combination keeps a row its input purged.
 *
 * Runs with random plan switches (under each `spark.punctuated.migration.strategy`): the
 * first batch runs the MJoin or a random plan, and two or three run-time requests (`punctuated.migrate`)
 * switch to random plans (trees or the MJoin) at random batches — one may fall right after a
 * restart, the restarts may fall inside an incomplete migration, and a second switch may come
 * before the first completed. (a) as above; (b) counts the nodes of the plan in force: under
 * `moving_state` no node is incomplete and the rows are exactly the model's; under `jisc` the
 * (node, cell) pairs reported incomplete are at most the plan's nodes times the cells, the rows
 * at least the inputs' and at most the model's, and exactly the model's whenever no node is
 * incomplete (the completion counters agree with the stored state); under `parallel_track`
 * (on the first [[parallelTrackRuns]] of them) as `jisc` once no cell runs the old plan any
 * more, and at least the inputs' rows while one does; (c) once everything is punctuated no
 * node is incomplete, no old plan runs and nothing is left.
 */
class MultiJoinPropertySuite extends PunctuatedStreamTest {
  import testImplicits._
  import MultiJoinModel._

  protected def cases: Int = 40
  protected def batches: Int = 4

  /**
   * The runs: a shape, its seed (which also draws the schemes and the interleavings) and the
   * number of partitions (hypercube cells). Spark's constraint propagation is on (its
   * default): it adds copies of a join's punctuation mark with columns replaced through the
   * query's equalities, and the mark must still be told from its copies (the test below runs
   * with it on explicitly).
   */
  protected def runs: Seq[(Shape, Long, Int)] = Seq(
    (Shape("chain a(x1) b(x1,x2) c(x2)", IndexedSeq(Set(0, 1), Set(0, 1, 2), Set(0, 2))), 11L, 1),
    (Shape("chain a(x1) b(x1,x2) c(x2)", IndexedSeq(Set(0, 1), Set(0, 1, 2), Set(0, 2))), 21L, 4),
    (Shape("cycle a(x1,x3) b(x1,x2) c(x2,x3)", IndexedSeq(Set(0, 1, 3), Set(0, 1, 2), Set(0, 2, 3))), 12L, 1),
    (Shape("cycle a(x1,x3) b(x1,x2) c(x2,x3)", IndexedSeq(Set(0, 1, 3), Set(0, 1, 2), Set(0, 2, 3))), 22L, 4),
    (Shape("star d(x1,x2,x3) a(x1) b(x2) c(x3)", IndexedSeq(Set(0, 1, 2, 3), Set(0, 1), Set(0, 2), Set(0, 3))), 13L, 4),
    (Shape("one key a(x1) b(x1) c(x1)", IndexedSeq(Set(0, 1), Set(0, 1), Set(0, 1))), 16L, 1),
    (randomShape("random, 4 inputs", 4, 2, new Random(14)), 14L, 4),
    (randomShape("random, 5 inputs", 5, 3, new Random(15)), 15L, 4)) ++
    // more random shapes on demand: PUNCTUATED_PROPERTY_EXTRA_SEEDS=N scripts/sbt "testOnly ..."
    (1 to sys.env.getOrElse("PUNCTUATED_PROPERTY_EXTRA_SEEDS", "0").toInt).map { k =>
      val rng = new Random(100L + k)
      val n = 3 + rng.nextInt(3)
      (randomShape(s"random #$k, $n inputs", n, 1 + rng.nextInt(3), rng), 100L + k, Seq(1, 2, 4, 7)(rng.nextInt(4)))
    }

  /**
   * Runs whose schemes also have range attributes (`x<=`, `x>=`: [[MultiJoinModel.randomRangeQuery]]),
   * under the MJoin and under a random tree plan.
   */
  protected def rangeRuns: Seq[(Shape, Long, Int)] = Seq(
    (Shape("chain a(x1) b(x1,x2) c(x2)", IndexedSeq(Set(0, 1), Set(0, 1, 2), Set(0, 2))), 32L, 4),
    (Shape("cycle a(x1,x3) b(x1,x2) c(x2,x3)", IndexedSeq(Set(0, 1, 3), Set(0, 1, 2), Set(0, 2, 3))), 33L, 2),
    (randomShape("random, 4 inputs", 4, 2, new Random(35)), 35L, 7),
    (randomShape("random, 5 inputs", 5, 3, new Random(36)), 36L, 4))

  for ((shape, seed, parts) <- rangeRuns) {
    test(s"random interleavings, range schemes, mjoin plan, $parts partition(s): ${shape.name} (seed $seed)") {
      run(shape, seed, parts, "mjoin", ranges = true)
    }
    val plan = randomTree(shape.inputs, new Random(seed * 31 + parts))
    val text = plan.text(i => s"in$i")
    test(s"random interleavings, range schemes, ${MultiJoinPlan.kind(plan)} plan $text, $parts partition(s): " +
        s"${shape.name} (seed $seed)") {
      run(shape, seed, parts, text, nodes = MultiJoinPlan.intermediates(plan).map(_.inputs), ranges = true)
    }
  }

  /**
   * Runs whose schemes may have two range attributes (`c, x1<=, x2>=`: a punctuation closes
   * the values under its corner in both, Tucker et al. 2003, §3; several close a staircase),
   * at least one such scheme drawn per run; under the MJoin and under a random tree plan. (Shapes
   * where an input with two classes is safe only with a scheme on each alone: a chain, a star.)
   */
  protected def twoRangeRuns: Seq[(Shape, Long, Int)] = Seq(
    (Shape("cycle a(x1,x3) b(x1,x2) c(x2,x3)", IndexedSeq(Set(0, 1, 3), Set(0, 1, 2), Set(0, 2, 3))), 45L, 1),
    (randomShape("random, 5 inputs", 5, 3, new Random(46)), 46L, 2))

  for ((shape, seed, parts) <- twoRangeRuns) {
    test(s"random interleavings, two-range schemes, mjoin plan, $parts partition(s): ${shape.name} (seed $seed)") {
      run(shape, seed, parts, "mjoin", ranges = true, several = true)
    }
    val plan = randomTree(shape.inputs, new Random(seed * 31 + parts))
    val text = plan.text(i => s"in$i")
    test(s"random interleavings, two-range schemes, ${MultiJoinPlan.kind(plan)} plan $text, $parts partition(s): " +
        s"${shape.name} (seed $seed)") {
      run(shape, seed, parts, text, nodes = MultiJoinPlan.intermediates(plan).map(_.inputs), ranges = true,
        several = true)
    }
  }

  /** Runs also made as a tree of binary joins (results only). */
  protected def writtenRuns: Seq[(Shape, Long, Int)] = runs.take(1)

  for ((shape, seed, parts) <- runs) {
    test(s"random interleavings, mjoin plan, $parts partition(s): ${shape.name} (seed $seed)") {
      run(shape, seed, parts, "mjoin")
    }
  }

  /**
   * Runs also made under a random tree plan (left-deep or bushy, by the seed): each shape once
   * (the range and two-range runs above run every shape under a tree too; CI's time).
   */
  protected def treeRuns: Seq[(Shape, Long, Int)] = runs.filter(_._3 > 1)

  for ((shape, seed, parts) <- treeRuns) {
    val plan = randomTree(shape.inputs, new Random(seed * 31 + parts))
    val text = plan.text(i => s"in$i")
    test(s"random interleavings, ${MultiJoinPlan.kind(plan)} plan $text, $parts partition(s): ${shape.name} (seed $seed)") {
      run(shape, seed, parts, text, nodes = MultiJoinPlan.intermediates(plan).map(_.inputs))
    }
  }

  /**
   * A random tree over inputs 0 .. n-1 with at least one intermediate node: left-deep over a
   * random order, or bushy (a random split of a random order into two or three parts, each
   * planned so again).
   */
  private def randomTree(n: Int, rng: Random): MultiJoinPlan.Join = {
    val order = rng.shuffle((0 until n).toList)
    def bushy(inputs: Seq[Int]): MultiJoinPlan =
      if (inputs.size == 1) MultiJoinPlan.Input(inputs.head)
      else {
        val parts = if (inputs.size == 2) 2 else 2 + rng.nextInt(2)
        val cuts = (rng.shuffle((1 until inputs.size).toList).take(parts - 1) :+ 0 :+ inputs.size).distinct.sorted
        MultiJoinPlan.Join(cuts.zip(cuts.tail).map { case (f, t) => bushy(inputs.slice(f, t)) })
      }
    val tree = if (rng.nextBoolean()) MultiJoinPlan.leftDeep(order) else bushy(order).asInstanceOf[MultiJoinPlan.Join]
    if (MultiJoinPlan.intermediates(tree).isEmpty) MultiJoinPlan.leftDeep(order) else tree
  }

  for ((shape, seed, parts) <- writtenRuns) {
    test(s"random interleavings, written plan (results only), $parts partition(s): ${shape.name} (seed $seed)") {
      run(shape, seed, parts, "written")
    }
  }

  /** Runs also made with random plan switches, under each migration strategy. */
  protected def migrationRuns: Seq[(Shape, Long, Int)] = Seq(runs(1), runs(2), runs(7))
  protected def strategies: Seq[String] = MultiJoinMigration.Strategies
  /** Of [[migrationRuns]], the first this many also run under `parallel_track` (the suite's time). */
  protected def parallelTrackRuns: Int = 2

  for (((shape, seed, parts), r) <- migrationRuns.zipWithIndex; strategy <- strategies
       if strategy != "parallel_track" || r < parallelTrackRuns) {
    test(s"random interleavings, random plan switches ($strategy), $parts partition(s): ${shape.name} (seed $seed)") {
      val rng = new Random(seed * 17 + parts)
      def plan(): MultiJoinPlan.Join = if (rng.nextInt(4) == 0) MultiJoinPlan.mjoin(shape.inputs) else randomTree(shape.inputs, rng)
      // two or three switches at random batches before everything is punctuated; the one at batch 2
      // comes right after a restart, and the restarts at 2 and batches + 2 may fall inside a migration
      val at = rng.shuffle((1 to batches + 1).toList).take(2 + rng.nextInt(2)).sorted
      // half the runs start with the MJoin: their first switch to a tree makes every node new
      val first = if (rng.nextBoolean()) MultiJoinPlan.mjoin(shape.inputs) else plan()
      run(shape, seed, parts, "mjoin", start = Some(first), switches = at.map(_ -> plan()).toMap, strategy = strategy)
    }
  }

  test("constraint propagation on: a random 5-input query's punctuations decode (seed 15)") {
    // failed with PUNCTUATED_INVALID_PUNCTUATION on in0's first punctuation (both plans) while a
    // copy of a mark could be taken for the mark
    run(randomShape("random, 5 inputs", 5, 3, new Random(15)), 15L, 4, "mjoin", constraintPropagation = true)
  }

  /** One query of `shape` under `plan`: random batches, then every scheme punctuated, then every case closed. */
  /**
   * @param start    under switches: the plan of the first batch
   * @param switches batch -> the plan a run-time request (`punctuated.migrate`) switches to before it:
   *                 then (b) counts the plan's node rows, which `jisc` may not have completed yet (the
   *                 rows are then at most the model's, and exactly them once no node is incomplete);
   *                 everything punctuated, no node is incomplete
   * @param ranges   schemes with range attributes too ([[MultiJoinModel.randomRangeQuery]])
   * @param several  and some with two range attributes (at least one drawn)
   */
  private def run(shape: Shape, seed: Long, partitions: Int, plan: String,
      constraintPropagation: Boolean = true, nodes: Seq[Seq[Int]] = Nil, start: Option[MultiJoinPlan.Join] = None,
      switches: Map[Int, MultiJoinPlan.Join] = Map.empty, strategy: String = "jisc", ranges: Boolean = false,
      several: Boolean = false): Unit = {
    def text(p: MultiJoinPlan.Join) = if (p.isMJoin) "mjoin" else p.text(i => s"in$i")
    def inForce(b: Int): Option[MultiJoinPlan.Join] =
      switches.filter(_._1 <= b).toSeq.sortBy(_._1).lastOption.map(_._2).orElse(start)
    val rng = new Random(seed)
    val query = safeQuery(shape, rng, ranges, several).getOrElse(fail(s"no safe schemes for ${shape.name} (seed $seed)"))
    if (ranges) assert(query.ranges.exists(_.nonEmpty), s"no range scheme drawn: $query")
    val clue = s"seed $seed, $query"
    val multi = plan != "written"
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString,
        PunctuatedConf.JoinPlan -> start.map(text).getOrElse(plan), PunctuatedConf.MigrationStrategy -> strategy,
        PunctuatedConf.SafetyMode -> (if (multi) "strict" else "off"),
        SQLConf.CONSTRAINT_PROPAGATION_ENABLED.key -> constraintPropagation.toString) {
      val model = new MultiJoinModel(query)
      val n = shape.inputs
      val sources = IndexedSeq.fill(n)(MemoryStream[MJRow])
      val inputs = (0 until n).map(i => input(sources(i), i, query))
      val joined = (1 until n).foldLeft(inputs(0)) { (acc, j) => acc.join(inputs(j), condition(inputs, j, query, rng)) }
      val out = joined.select(inputs(0)("i0_c") +: (0 until n).map(i => inputs(i)(s"i${i}_v")): _*)

      val regular = (0 until batches).map(b => () => (0 until cases).flatMap(c => model.generate(c, b, multi, rng)))
      // then every scheme punctuated everywhere; then some inputs close each case, then all
      val last = Seq(() => (0 until cases).flatMap(model.punctuateAll),
        () => (0 until cases).flatMap(c => model.closeCase(c, Some(rng))),
        () => (0 until cases).flatMap(c => model.closeCase(c, None)))
      val exercised = scala.collection.mutable.ArrayBuffer.empty[String]
      // per batch: (node, cell) pairs incomplete and keys completed, as the operator reported them
      val completion = scala.collection.mutable.ArrayBuffer.empty[String]
      val actions = (regular ++ last).zipWithIndex.flatMap { case (gen, b) =>
        val elems = gen()
        model.endBatch(elems)
        val expected = model.output.map(Row.fromSeq)
        val nodesNow = inForce(b).map(p => MultiJoinPlan.intermediates(p).map(_.inputs)).getOrElse(nodes)
        val nodeRows = nodesNow.map(model.nodeRows).sum
        val (rows, puncts, late) = (model.storedRows + nodeRows, model.heldPunctuations, model.lateInBatch)
        exercised += s"$b: ${model.purgedInBatch} purged, ${model.releasedInBatch} released, $late late, " +
          s"$rows rows ($nodeRows in nodes) and $puncts punctuations left"
        // the model itself: safe schemes drain every row, closed cases every punctuation
        if (b >= batches) assert(rows == 0, s"model keeps $rows rows after punctuating everything ($clue)")
        if (b == batches + 2) assert(puncts == 0, s"model holds $puncts punctuations at the end ($clue)")
        val add = MultiAddData(sources.indices.map(i => sources(i) -> elems.filter(_.input == i).map(_.row)): _*)
        val check = AssertOnQuery(s"batch $b: $rows rows, $puncts punctuations, $late late ($clue)") { q =>
          val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
          assert(ops.map(_.operatorName).toSeq == Seq("punctuatedMultiJoin"), s"($clue) ${settledProgress(q).json}")
          val p = ops.head
          val incomplete = p.customMetrics.get(MultiJoinMigration.NumIncompleteStates)
          completion += s"$b: $incomplete incomplete, ${p.customMetrics.get(MultiJoinMigration.NumKeysCompleted)} keys completed"
          if (strategy == "moving_state" || b >= batches) assert(incomplete == 0L, s"batch $b: incomplete ($clue) ${p.json}")
          assert(incomplete <= nodesNow.size * partitions, s"batch $b: incomplete ($clue) ${p.json}")
          // parallel_track: cells still running the old plan keep its nodes, and the new rows twice
          val parallel = p.customMetrics.get(MultiJoinMigration.NumParallelPlans)
          if (b >= batches) assert(parallel == 0L, s"batch $b: $parallel old plans left ($clue) ${p.json}")
          if (parallel > 0L) assert(p.numRowsTotal >= model.storedRows,
            s"batch $b: rows ${p.numRowsTotal} < ${model.storedRows} ($clue) ${p.json}")
          else if (incomplete == 0L) assert(p.numRowsTotal == rows, s"batch $b: rows ${p.numRowsTotal} != $rows ($clue) ${p.json}")
          else assert(p.numRowsTotal >= model.storedRows && p.numRowsTotal <= rows,
            s"batch $b: rows ${p.numRowsTotal} not in ${model.storedRows} .. $rows ($clue) ${p.json}")
          assert(p.customMetrics.get("numPunctuationsHeld") == puncts,
            s"batch $b: punctuations ${p.customMetrics.get("numPunctuationsHeld")} != $puncts ($clue) ${p.json}")
          assert(p.customMetrics.get("numLateRowsDropped") == late,
            s"batch $b: late ${p.customMetrics.get("numLateRowsDropped")} != $late ($clue) ${p.json}")
          true
        }
        // stop and restart from the checkpoint before the third batch and before the last
        (if (b == 2 || b == batches + 2) Seq(StopStream, StartStream()) else Nil) ++
          switches.get(b).map(p => Execute(s"migrate to ${text(p)}") { q => MigrationRequests.request(new StreamingQueryWrapper(q), text(p)) }).toSeq ++
          Seq(add, CheckAnswer(expected: _*)) ++ (if (multi) Seq(check) else Nil)
      }
      info(s"$clue; per batch: ${exercised.mkString("; ")}")
      withClue(clue) { testStream(out)(actions: _*) }
      if (switches.nonEmpty) info(s"switches ${switches.toSeq.sortBy(_._1).map { case (b, p) => s"$b: ${text(p)}" }
        .mkString(", ")}; ${completion.mkString("; ")}")
    }
  }

  /** Input `i`: its case column, class columns, value and marker, declared with its schemes. */
  private def input(source: MemoryStream[MJRow], i: Int, query: Query): DataFrame = {
    def col(k: Int) = if (k == 0) s"i${i}_c" else s"i${i}_x$k"
    val classes = query.shape.classesOf(i).toSeq.sorted
    val df = source.toDF().selectExpr(classes.map(k => s"${if (k == 0) "c" else s"x$k"} AS ${col(k)}") ++
      Seq(s"v AS i${i}_v", s"p AS i${i}_p"): _*)
    def attrs(s: Set[Int]) = s.toSeq.sorted.map(k => col(k) +
      query.operatorOf(i, s, k)).mkString(", ")
    val props = Seq(Schemes -> (Set(0) +: query.schemes(i)).map(attrs).mkString("; "), Marker -> s"i${i}_p") ++
      query.unique(i).map(u => Unique -> attrs(u))
    declare(df, s"in$i", props: _*)
  }

  /**
   * The condition joining input `j` to the inputs before it: its case column and each of its
   * class columns equal to the same class's column of a random earlier input that has one.
   */
  private def condition(inputs: IndexedSeq[DataFrame], j: Int, query: Query, rng: Random): Column = {
    val classesOf = query.shape.classesOf
    classesOf(j).toSeq.sorted.flatMap { k =>
      val earlier = (0 until j).filter(classesOf(_)(k))
      if (earlier.isEmpty) None else {
        val i = earlier(rng.nextInt(earlier.size))
        def name(x: Int) = if (k == 0) s"i${x}_c" else s"i${x}_x$k"
        Some(inputs(j)(name(j)) === inputs(i)(name(i)))
      }
    }.reduce(_ && _)
  }
}

/** [[MultiJoinPropertySuite]] on RocksDB state stores (fewer cases and shapes). */
class MultiJoinPropertyRocksDBSuite extends MultiJoinPropertySuite with OnRocksDB {
  override protected def cases: Int = 12
  override protected def runs: Seq[(MultiJoinModel.Shape, Long, Int)] = super.runs.filter(_._3 == 4).take(2)
  override protected def writtenRuns: Seq[(MultiJoinModel.Shape, Long, Int)] = Nil
  override protected def treeRuns: Seq[(MultiJoinModel.Shape, Long, Int)] = super.runs.filter(_._3 == 4).take(1)
  override protected def migrationRuns: Seq[(MultiJoinModel.Shape, Long, Int)] = super.runs.filter(_._3 == 4).take(1)
  override protected def rangeRuns: Seq[(MultiJoinModel.Shape, Long, Int)] = super.rangeRuns.filter(_._3 > 1).take(1)
  override protected def twoRangeRuns: Seq[(MultiJoinModel.Shape, Long, Int)] = Nil
}
