package punctuated.join.multi

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.classic.{SparkSession => ClassicSession}
import org.apache.spark.sql.execution.{QueryExecution, SparkPlan}

import punctuated.compat.StatefulOperator

/**
 * The input sizes a multi-way join's hypercube shares are weighed by (Afrati and Ullman 2010,
 * §3: the shares minimising the rows sent depend on how many rows each input sends): the
 * first micro-batch's rows, counted before the batch runs, per input and per set of classes a
 * row pins ([[MultiJoinExchangeExec.Pins]]: a data row its input's classes, a punctuation the
 * classes its scheme binds). [[Hypercube.chooseWeighted]] then picks the shares that send the
 * fewest copies of exactly these rows. The shares are chosen once — the plan log records them
 * with the first batch and they win from then on, since the stored rows sit in the cells they
 * name — so the first batch stands for the stream.
 *
 * {{{
 *   bids(a) ⋈ auctions(a, p) ⋈ persons(p), 4 partitions, first batch 92,000 / 6,000 / 2,000 rows
 *     equal weights        shares (2, 2): every row to 2 cells               2.00 copies per row
 *     first-batch weights  shares (4, 1): persons to 4 cells, bids to 1        1.06 copies per row
 * }}}
 *
 * Counting reads the first batch's input once more (each input's plan is copied, with its own
 * metrics, so the batch's progress counts its rows once; sources replay a batch's offsets). It
 * is skipped — every input weighted alike, [[Hypercube.choose]] — when an input's plan holds a
 * stateful operator (running it twice would commit its state twice) or when the first batch has
 * no rows, and given up (logged) if counting fails; `spark.punctuated.join.shareWeights=equal`
 * skips it always.
 */
object MultiJoinShareWeights extends Logging {

  /**
   * Rows of this batch per set of classes they pin, over all the inputs (None: not counted,
   * see above).
   *
   * @param session    the query's session
   * @param inputs     each input of the group with its physical plan (below the exchange)
   * @param numClasses the group's number of attribute classes
   */
  def firstBatch(session: SparkSession, inputs: Seq[(MultiJoinInputSpec, SparkPlan)],
      numClasses: Int): Option[Seq[(Set[Int], Long)]] =
    if (inputs.exists(_._2.exists(_.isInstanceOf[StatefulOperator]))) None
    else try {
      val counts = inputs.flatMap { case (input, plan) => pinnedCounts(session, input, plan, numClasses) }
        .groupMapReduce(_._1)(_._2)(_ + _).toSeq
      if (counts.forall(_._2 == 0)) None else Some(counts)
    } catch {
      // the weights only choose among correct placements: never fail the query for them
      case NonFatal(e) =>
        logWarning(s"Punctuated: the multi-way join's shares weigh every input alike: counting the " +
          s"first batch's rows failed (${e.getClass.getSimpleName}: ${e.getMessage})")
        None
    }

  /** One input's rows of this batch per set of classes they pin (one Spark job). */
  private def pinnedCounts(session: SparkSession, input: MultiJoinInputSpec, plan: SparkPlan,
      numClasses: Int): Seq[(Set[Int], Long)] = {
    // a copy: fresh metrics (the batch's own scan reports its rows once), made executable
    // (columnar transitions, code generation) as Spark prepares a subquery's plan
    val prepared = QueryExecution.prepareExecutedPlan(session.asInstanceOf[ClassicSession], plan.clone())
    val spec = input
    val perPartition = prepared.execute().mapPartitions { rows =>
      val pins = new MultiJoinExchangeExec.Pins(spec)
      val counts = scala.collection.mutable.HashMap.empty[Option[Seq[Int]], Long]
      rows.foreach { row =>
        val positions = pins(row)
        counts(positions) = counts.getOrElse(positions, 0L) + 1
      }
      Iterator.single(counts.toMap)
    }.collect()
    perPartition.toSeq.flatten.groupMapReduce(_._1)(_._2)(_ + _).toSeq.map {
      case (Some(positions), n) => positions.map(spec.classes).toSet -> n
      case (None, n) => (0 until numClasses).toSet -> n   // to cell 0 alone: one copy
    }
  }
}
