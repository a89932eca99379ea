package punctuated.join.multi

import org.apache.spark.sql.execution.streaming.operators.stateful.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric}
import org.apache.spark.sql.streaming.StateOperatorProgress

/**
 * What [[PunctuatedMultiJoinExec]] observes per micro-batch for the choice of plans and probe
 * orders ([[MultiJoinStatistics]]), as custom metrics of the operator (summed over its cells,
 * so they reach the query's progress, `lastProgress.stateOperators(_).customMetrics`):
 *
 *  - `input<i>RowsArrived`: data rows of input i that arrived in the batch (each row counted
 *    once, in its home cell; late rows included, rows with a NULL join column not);
 *  - `input<i>RowsStored`: input i's stored rows after the batch;
 *  - `input<j>Probes.c<c>`: look-ups of input j's state by a value of attribute class c (by
 *    the join's probes of every input and intermediate node);
 *  - `input<j>ProbeMatches.c<c>`: the stored rows those look-ups found.
 *
 * Rows and probes are counted once however the hypercube copies them ([[once]]): a row in the
 * one cell of its copies whose coordinates of the classes it does not bind are 0.
 *
 * The driver turns the previous batch's values into the statistics of the next ([[statistics]]):
 * rate = rows arrived, stored = rows stored, fan-out = matches / probes (1 without probes).
 *
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v), a batch of 1000 rows of a, 10 of b, 10 of c, each a's row finding
 *   2 rows of b by k:  input0RowsArrived = 1000, input1Probes.c0 = 1000,
 *                      input1ProbeMatches.c0 = 2000  ->  rate(0) = 1000, fanout(1)(0) = 2
 * }}}
 */
object MultiJoinObserved {
  /**
   * Is this the one cell of its copies that counts a look-up made with the classes bound in
   * `binding` (non-null) and `also`? Copies of a partial result go to every cell agreeing on
   * its bound classes' coordinates; the one with coordinate 0 on every other class counts.
   * With `also` = the probed input's classes it counts the rows found: the copies of a probe
   * along the probed input's other classes each find a part of them.
   */
  def once(coordinates: IndexedSeq[Int], binding: Array[_ <: AnyRef], also: Seq[Int]): Boolean = {
    var c = 0
    var ok = true
    while (ok && c < coordinates.size) {
      if (coordinates(c) != 0 && binding(c) == null && !also.contains(c)) ok = false
      c += 1
    }
    ok
  }

  def arrived(i: Int): String = s"input${i}RowsArrived"
  def stored(i: Int): String = s"input${i}RowsStored"
  def probes(j: Int, c: Int): String = s"input${j}Probes.c$c"
  def matches(j: Int, c: Int): String = s"input${j}ProbeMatches.c$c"

  /** The metrics of inputs of these classes (input i's classes `classes(i)`). */
  def metrics(classes: Seq[Seq[Int]]): Seq[StatefulOperatorCustomMetric] = classes.indices.flatMap { i =>
    Seq(StatefulOperatorCustomSumMetric(arrived(i), s"data rows of input $i arrived"),
      StatefulOperatorCustomSumMetric(stored(i), s"rows of input $i stored after the batch")) ++
      classes(i).flatMap(c => Seq(
        StatefulOperatorCustomSumMetric(probes(i, c), s"look-ups of input $i by class $c"),
        StatefulOperatorCustomSumMetric(matches(i, c), s"rows of input $i found by class $c")))
  }

  /**
   * The statistics a batch's metrics (`values`, by name) show, for inputs of these classes;
   * None when a metric is missing (another operator's progress).
   */
  def statistics(values: String => Option[Long], classes: Seq[Seq[Int]]): Option[MultiJoinStatistics] = {
    val n = classes.size
    val all = (0 until n).flatMap(i => Seq(arrived(i), stored(i)) ++ classes(i).flatMap(c => Seq(probes(i, c), matches(i, c))))
    if (!all.forall(values(_).isDefined)) None
    else Some(MultiJoinStatistics(
      (0 until n).map(i => values(arrived(i)).get.toDouble),
      (0 until n).map(i => values(stored(i)).get.toDouble),
      (0 until n).map(j => classes(j).map { c =>
        val p = values(probes(j, c)).get
        c -> (if (p == 0) MultiJoinStatistics.DefaultFanout else values(matches(j, c)).get.toDouble / p)
      }.toMap)))
  }

  /** [[statistics]] of one state operator's progress (None: not a multi-way join of these inputs). */
  def fromProgress(p: StateOperatorProgress, classes: Seq[Seq[Int]]): Option[MultiJoinStatistics] =
    // a multi-way join of more inputs reports input<n>RowsArrived too
    if (p.operatorName != "punctuatedMultiJoin" || p.customMetrics.containsKey(arrived(classes.size))) None
    else statistics(name => Option(p.customMetrics.get(name)).map(_.longValue), classes)
}
