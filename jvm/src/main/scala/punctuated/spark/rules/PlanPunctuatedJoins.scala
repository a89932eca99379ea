package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Expression, Literal}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import punctuated.compat.EventTimeWatermarkExec
import punctuated.compat.StreamingSymmetricHashJoinExec

import punctuated.checkpoint.{CheckpointDeclarations, OncePerRun, OperatorRecords, StateMetadata, StoreSchemas}
import punctuated.conf.PunctuatedConf
import punctuated.input.{InputSpec, PunctuationColumns, PunctuationReplicatingExchangeExec}
import punctuated.join.{JoinPartitionWideRows, PunctuatedSymmetricHashJoinExec, TimeBand, WatermarkPunctuations}

/**
 * Physical rule (run before columnar transitions, after Spark's incremental planner has given
 * each stateful operator its state location and `EnsureRequirements` has placed the
 * shuffles): a `StreamingSymmetricHashJoinExec` whose condition carries the
 * [[PunctuationColumns]] mark becomes a [[PunctuatedSymmetricHashJoinExec]] with the same
 * keys, join type, condition (less the mark), state location and children. Spark's shuffle
 * below an input whose punctuations can concern every partition becomes a
 * [[PunctuationReplicatingExchangeExec]] (as is the one below an input whose range
 * punctuations on a time band's column purge: [[TimeBand]]). The event-time watermark Spark
 * assigned the join for eviction is carried over: it is the range punctuation `ts<=w` of the
 * band's inputs whose `withWatermark` column is the band's time column ([[WatermarkPunctuations]]).
 * Every other plan is returned unchanged.
 */
case class PlanPunctuatedJoins(session: SparkSession) extends ColumnarRule {

  // the checkpoint checks and writes of each operator: at a run's first micro-batch
  private val once = new OncePerRun
  // the Hadoop conf the operators' tasks open their extra stores with: broadcast once per run
  private val hadoopConfs = new punctuated.state.HadoopConfPerRun(session)

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      if (!plan.exists { case j: StreamingSymmetricHashJoinExec => PunctuationColumns.find(j.condition.full).isDefined
                         case _ => false }) plan   // no punctuated join: nothing to plan, nothing to walk
      else {
      // Output punctuations only reach a query's results that carry a marker column; without
      // one they would look like data rows, so they are not produced at all.
      val resultIds = queryOutput(plan).map(_.exprId).toSet
      // ... or to a punctuated aggregation downstream, which reads them
      // ... or to a punctuated join above, whose input is this join's output (derived declaration)
      val consumed = PlanPunctuatedAggregates.kinds(plan).flatMap(_.references.map(_.exprId)).toSet ++
        plan.collect { case j: StreamingSymmetricHashJoinExec => PunctuationColumns.find(j.condition.full) }
          .flatten.flatMap(m => (m.left.toSeq ++ m.right).filter(_.declaration.derived.isDefined))
          .flatMap(_.markerIds)
      val conf = PunctuatedConf(session.sessionState.conf)
      // withWatermark operators of the query: with several, the policy decides the global watermark
      val watermarks = plan.collect { case w: EventTimeWatermarkExec => w }.size
      plan.transformUp {
      case j: StreamingSymmetricHashJoinExec if j.stateInfo.isDefined &&
          PunctuationColumns.find(j.condition.full).isDefined =>
        val mark = PunctuationColumns.find(j.condition.full).get
        val band = TimeBand.of(j.condition.full.flatMap(withoutMark), j.left.output, j.right.output,
          mark.left, mark.right, WatermarkPunctuations.inputs(_, IndexedSeq(j.left.output, j.right.output),
            session.sessionState.conf, watermarks))
        // without a band, a watermark on a join-key column is its input's range punctuation on it
        val sound = band.isEmpty && WatermarkPunctuations.soundPolicy(session.sessionState.conf, watermarks)
        val leftSpec = WatermarkPunctuations.onKey(InputSpec.of(mark.left, j.leftKeys, j.left.output),
          j.leftKeys, j.left, sound)
        val rightSpec = WatermarkPunctuations.onKey(InputSpec.of(mark.right, j.rightKeys, j.right.output),
          j.rightKeys, j.right, sound)
        val (left, leftReplicated) = replicating(j.left, leftSpec, j.leftKeys, band.flatMap(_.schemes(0)))
        val (right, rightReplicated) = replicating(j.right, rightSpec, j.rightKeys, band.flatMap(_.schemes(1)))
        val exec = PunctuatedSymmetricHashJoinExec(
          leftKeys = j.leftKeys,
          rightKeys = j.rightKeys,
          joinType = j.joinType,
          condition = j.condition.full.flatMap(withoutMark),
          stateInfo = j.stateInfo,
          leftSpec = leftSpec,
          rightSpec = rightSpec,
          settings = conf.copy(emitPunctuations = {
            val markers = (mark.left.toSeq ++ mark.right).flatMap(_.markerId)
            (conf.emitPunctuations && markers.exists(resultIds.contains)) || markers.exists(consumed.contains)
          }),
          leftReplicated = leftReplicated,
          rightReplicated = rightReplicated,
          left = left,
          right = right,
          band = band,
          eventTimeWatermark = j.eventTimeWatermarkForEviction)
        exec.copyTagsFrom(j)
        hadoopConfs.attach(exec, j.stateInfo.get)
        once(j.stateInfo.get) {
          val hadoopConf = session.sessionState.newHadoopConf()
          // before any of its state stores is opened: the state's declarations are followable
          CheckpointDeclarations.verify(j.stateInfo.get, OperatorRecords.join(exec,
            mark.left.map(_.declaration), mark.right.map(_.declaration)), hadoopConf)
          // Spark's metadata and schema files describe its join: ours replace them
          StateMetadata.write(j.stateInfo.get, j.shortName, StoreSchemas.join(exec), session,
            hadoopConf)
        }
        exec
      }
    }
  }

  /**
   * Spark's hash shuffle below an input with partition-wide schemes (range, key prefix)
   * becomes a [[PunctuationReplicatingExchangeExec]] (same partitioning; such punctuation
   * rows go to every partition): returns the input and whether it was replaced.
   */
  private def replicating(child: SparkPlan, spec: InputSpec, keys: Seq[Expression],
      bandScheme: Option[Int]): (SparkPlan, Boolean) =
    child match {
      case s: ShuffleExchangeExec
          if PunctuatedSymmetricHashJoinExec.hasPartitionWide(spec, keys) || bandScheme.isDefined =>
        s.outputPartitioning match {
          case h: HashPartitioning =>
            (PunctuationReplicatingExchangeExec(h, JoinPartitionWideRows(spec, keys.length, bandScheme), s.child), true)
          case _ => (child, false)
        }
      case _ => (child, false)
    }

  /** The query's result columns (below the sink's write node, which outputs nothing). */
  private def queryOutput(plan: SparkPlan): Seq[org.apache.spark.sql.catalyst.expressions.Attribute] =
    if (plan.output.isEmpty && plan.children.size == 1) queryOutput(plan.children.head) else plan.output

  /** The condition without the mark (None when nothing else is left). */
  private def withoutMark(condition: Expression): Option[Expression] = {
    def strip(e: Expression): Option[Expression] = e match {
      case _: PunctuationColumns => None
      case And(a, b) => (strip(a), strip(b)) match {
        case (Some(x), Some(y)) => Some(And(x, y))
        case (x, y) => x.orElse(y)
      }
      case other => Some(other)
    }
    strip(condition).filterNot(_ == Literal.TrueLiteral)
  }
}
