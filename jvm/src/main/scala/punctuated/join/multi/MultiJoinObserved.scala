package punctuated.join.multi

import punctuated.compat.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric}
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
 *  - `input<j>ProbeMatches.c<c>`: the stored rows those look-ups found;
 *  - `input<j>DistinctValues.c<c>`: the distinct values of class c among input j's stored rows
 *    after the batch, summed over cells ([[MultiJoinDistinctValues]]: kept incrementally);
 *  - `input<j>UncountedCells`: cells of a checkpoint older than those counters that cannot
 *    count input j's values yet.
 *
 * Rows, probes and values are counted once however the hypercube copies them ([[once]]): a row
 * in the one cell of its copies whose coordinates of the classes it does not bind are 0.
 *
 * The driver turns the previous batch's values into the statistics of the next ([[statistics]]):
 * rate = rows arrived, stored = rows stored, fan-out of input j on class c = j's rows stored /
 * distinct values of c among them — what the state holds, the same whichever plan runs and
 * whatever order the batch's rows came in (a plan that never looks j up by c, as `((a ⋈ b) ⋈ c)`
 * never looks b up by v, measures it all the same). 1 when j stores no rows; from look-ups
 * (matches / probes, 1 without probes) while some cell of j is uncounted. Look-ups stay metrics.
 *
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v), after a batch b stores 20 rows on 2 values of v and 20 of k:
 *     input1RowsStored = 20, input1DistinctValues.c0 = 20, input1DistinctValues.c1 = 2
 *     ->  fanout(1) = {0: 1, 1: 10}
 * }}}
 *
 * The hypercube splits an input's rows of one value over the cells of its other classes'
 * coordinates: a value counts once per cell it has rows in (what a look-up in one cell finds).
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
  def distinctValues(j: Int, c: Int): String = s"input${j}DistinctValues.c$c"
  def uncounted(j: Int): String = s"input${j}UncountedCells"

  /** The metrics of inputs of these classes (input i's classes `classes(i)`). */
  def metrics(classes: Seq[Seq[Int]]): Seq[StatefulOperatorCustomMetric] = classes.indices.flatMap { i =>
    Seq(StatefulOperatorCustomSumMetric(arrived(i), s"data rows of input $i arrived"),
      StatefulOperatorCustomSumMetric(stored(i), s"rows of input $i stored after the batch"),
      StatefulOperatorCustomSumMetric(uncounted(i), s"cells not counting input $i's distinct values")) ++
      classes(i).flatMap(c => Seq(
        StatefulOperatorCustomSumMetric(probes(i, c), s"look-ups of input $i by class $c"),
        StatefulOperatorCustomSumMetric(matches(i, c), s"rows of input $i found by class $c"),
        StatefulOperatorCustomSumMetric(distinctValues(i, c), s"distinct values of class $c among input $i's rows")))
  }

  /**
   * The statistics a batch's metrics (`values`, by name) show, for inputs of these classes;
   * None when a metric is missing (another operator's progress). The distinct-value metrics
   * may be missing (a progress from before they existed): then, as while a cell of the input
   * is uncounted, the input's fan-outs come from look-ups.
   */
  def statistics(values: String => Option[Long], classes: Seq[Seq[Int]]): Option[MultiJoinStatistics] = {
    val n = classes.size
    val all = (0 until n).flatMap(i => Seq(arrived(i), stored(i)) ++ classes(i).flatMap(c => Seq(probes(i, c), matches(i, c))))
    if (!all.forall(values(_).isDefined)) None
    else Some(MultiJoinStatistics(
      (0 until n).map(i => values(arrived(i)).get.toDouble),
      (0 until n).map(i => values(stored(i)).get.toDouble),
      (0 until n).map(j => classes(j).map(c => c -> fanout(values, j, c)).toMap)))
  }

  /** Input j's fan-out on class c: rows stored / distinct values (see above), else from look-ups. */
  private def fanout(values: String => Option[Long], j: Int, c: Int): Double =
    (values(distinctValues(j, c)), values(uncounted(j))) match {
      case (Some(d), Some(0L)) =>
        val rows = values(stored(j)).get
        if (rows == 0 || d == 0) MultiJoinStatistics.DefaultFanout else rows.toDouble / d
      case _ =>
        val p = values(probes(j, c)).get
        if (p == 0) MultiJoinStatistics.DefaultFanout else values(matches(j, c)).get.toDouble / p
    }

  /** [[statistics]] of one state operator's progress (None: not a multi-way join of these inputs). */
  def fromProgress(p: StateOperatorProgress, classes: Seq[Seq[Int]]): Option[MultiJoinStatistics] =
    // a multi-way join of more inputs reports input<n>RowsArrived too
    if (p.operatorName != "punctuatedMultiJoin" || p.customMetrics.containsKey(arrived(classes.size))) None
    else statistics(name => Option(p.customMetrics.get(name)).map(_.longValue), classes)
}
