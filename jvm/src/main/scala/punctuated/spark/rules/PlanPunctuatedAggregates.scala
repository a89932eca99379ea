package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, ExprId, GreaterThan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, GenerateExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import punctuated.compat.{EventTimeWatermarkExec, StateStoreRDDs, StateStoreRestoreExec, StateStoreSaveExec}
import org.apache.spark.sql.catalyst.expressions.Explode

import punctuated.aggregate._
import punctuated.checkpoint.{CheckpointDeclarations, OncePerRun, OperatorRecords, PerRun, StateLayouts, StateMetadata, StoreSchemas}
import punctuated.conf.PunctuatedConf
import punctuated.input.{KeyPrefix, PunctuationKind, PunctuationOutputs, PunctuationTag}
import punctuated.input.Watermarks

/**
 * Physical rule (before columnar transitions, after Spark's incremental planner has given
 * each stateful operator its state location): the state-store save step of a punctuated
 * aggregation (its merge step computes the hidden counts of the aggregation's
 * [[AggregateLayout]]) becomes a [[PunctuatedAggregateExec]] with the same keys, state
 * location and output mode. Spark's restore step, which reads the same state store, becomes a
 * [[PunctuatedRestoreExec]] (the same reads, the store opened with the run's Hadoop conf) on
 * Spark 4.2; on 4.0 and 4.1 it stays Spark's.
 */
case class PlanPunctuatedAggregates(session: SparkSession) extends ColumnarRule {

  // the checkpoint checks and writes of each operator: at a run's first micro-batch
  private val once = new OncePerRun
  // the grouping-key positions each operator's shuffle hashes by (None: all), decided at a run's start
  private val partitionings = new PerRun[Option[Seq[Int]]]
  // the Hadoop conf the operators' tasks open their extra stores with: broadcast once per run
  private val hadoopConfs = new punctuated.state.HadoopConfPerRun(session)

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = {
      // the kinds the plan's aggregations carry in their hidden counts (punctuation_tag)
      val kinds = plan.collect { case a: BaseAggregateExec => PunctuationTag.kinds(a.aggregateExpressions) }
        .flatMap(_.values).distinct
      val layouts = kinds.map(_.layout)
      if (layouts.isEmpty) plan
      else {
        val conf = PunctuatedConf(session.sessionState.conf)
        val emitting = emittingOperators(plan, conf)
        // withWatermark operators of the query: with several, the policy decides the global watermark
        val watermarks = plan.collect { case w: EventTimeWatermarkExec => w }.size
        // the invalid-punctuation policy of this run (the kind column was built at analysis)
        val policed = plan.transformUp { case p: ProjectExec =>
          p.transformExpressions { case k: PunctuationKind => k.copy(failOnInvalid = conf.failOnInvalidPunctuations) }
        }
        val coPartitioned = KeyPrefix.coPartitioned(plan) {
          case s: StateStoreSaveExec if s.stateInfo.isDefined => s.stateInfo.get.operatorId
        }
        // then, where nothing uses an aggregation's output punctuations, its final rows go out as they are
        FinalRowsOnly(policed.transformUp {
          case s: StateStoreSaveExec if s.stateInfo.isDefined =>
            (s.child, layouts.find(l => merged(s.child).exists(_.resultId == l.counts))) match {
              case (agg: BaseAggregateExec, Some(layout)) =>
                // the hidden counts' buffer (rows, kinds, invalid, received: PunctuationCounts)
                val counts = agg.aggregateExpressions.find(_.resultId == layout.counts).get
                  .aggregateFunction.inputAggBufferAttributes
                def ordinal(i: Int) = s.child.output.indexWhere(_.exprId == counts(i).exprId)
                val kindsBuffer = counts(1).exprId
                // hashed by the grouping columns every part-of-key scheme fixes (a new checkpoint;
                // else as it was started): their punctuations go to one partition, the others'
                // (a range, another part of the key) to every partition
                val keyLength = s.keyExpressions.size
                val prefix = ReplicatingShuffles.prefix(session, s.stateInfo.get, layout, keyLength, coPartitioned,
                  partitionings)
                val wideKinds = KeyPrefix.replicated(layout, keyLength, prefix).foldLeft(0L)((b, k) => b | (1L << k))
                val (child, replicated) = ReplicatingShuffles.replace(s.child, KeyPrefix.partitioning(prefix, keyLength)) {
                  output =>
                    val ordinal = output.indexWhere(_.exprId == kindsBuffer)
                    if ((wideKinds == 0 && prefix.isEmpty) || ordinal < 0) None
                    else Some(AggregatePartitionWideRows(ordinal, wideKinds))
                }
                val partitionedBy = ReplicatingShuffles.applied(prefix, replicated)
                // Spark's restore step of the same store: ours opens it with the run's Hadoop conf (4.2)
                val restored = if (!StateStoreRDDs.ownReadStore) child else child.transformUp {
                  case r: StateStoreRestoreExec if r.stateInfo.map(_.operatorId) == s.stateInfo.map(_.operatorId) =>
                    val restore = PunctuatedRestoreExec(r.keyExpressions, r.stateInfo, r.stateFormatVersion, r.child)
                    restore.copyTagsFrom(r)
                    hadoopConfs.attach(restore, s.stateInfo.get)
                    restore
                }
                val exec = PunctuatedAggregateExec(
                  keyExpressions = s.keyExpressions,
                  stateInfo = s.stateInfo,
                  outputMode = s.outputMode,
                  stateFormatVersion = s.stateFormatVersion,
                  layout = layout,
                  ordinals = AggregateOrdinals(ordinal(0), ordinal(1), ordinal(2), ordinal(3)),
                  partitionWide = replicated.map(ThroughShuffle(_)).getOrElse(Gathered(kindsBuffer)),
                  emit = emitting.contains(layout.counts),
                  settings = conf,
                  eventTimeWatermark = s.eventTimeWatermarkForEviction,
                  useWatermark = layout.watermarks.nonEmpty && Watermarks.usable(
                    session.sessionState.conf, watermarks, "aggregation", layout.watermarks.map(_.time.name)),
                  child = restored)
                exec.copyTagsFrom(s)
                hadoopConfs.attach(exec, s.stateInfo.get)
                once(s.stateInfo.get) {
                  val hadoopConf = session.sessionState.newHadoopConf()
                  // before any of its state stores is opened: the state's declarations are followable
                  CheckpointDeclarations.verify(s.stateInfo.get, OperatorRecords.keyed(exec.shortName,
                    StateLayouts.Aggregate, exec.stateStoreNames, kinds.find(_.layout == layout).get,
                    partitionedBy), hadoopConf)
                  // Spark's metadata and schema files describe its save step: ours replace them
                  StateMetadata.write(s.stateInfo.get, s.shortName, StoreSchemas.aggregate(exec), session,
                    hadoopConf)
                }
                exec
              case _ => s
            }
        })
      }
    }
  }

  private def merged(plan: SparkPlan) = plan match {
    case a: BaseAggregateExec => a.aggregateExpressions
    case _ => Nil
  }

  /**
   * Aggregations (by their hidden counts' id) whose output punctuations are used: by a
   * punctuated operator downstream, or by the results (`spark.punctuated.emitPunctuations`
   * and the marker column selected).
   */
  private def emittingOperators(plan: SparkPlan, conf: PunctuatedConf): Set[ExprId] = {
    val consumed = PlanPunctuatedAggregates.kinds(plan).flatMap(_.references.map(_.exprId)).toSet
    val results = PlanPunctuatedAggregates.queryOutput(plan).map(_.exprId).toSet
    val shown = plan.collect { case p: ProjectExec => p.projectList }.flatten.collect {
      case a @ Alias(GreaterThan(out: Attribute, _), _) if results.contains(a.exprId) => out.exprId
    }.toSet
    plan.collect {
      case g @ GenerateExec(Explode(_: PunctuationOutputs), _, _, _, _)
          if consumed.contains(g.generatorOutput.head.exprId) ||
            (conf.emitPunctuations && shown.contains(g.generatorOutput.head.exprId)) =>
        g.collectFirst { case s: StateStoreSaveExec => s }.toSeq.flatMap(s => merged(s.child))
          .map(_.resultId)
    }.flatten.toSet
  }
}

object PlanPunctuatedAggregates {
  /** The punctuated aggregations' kind expressions in a physical plan. */
  def kinds(plan: SparkPlan): Seq[PunctuationKind] =
    plan.collect { case p: ProjectExec => p.projectList }.flatten
      .flatMap(_.collect { case k: PunctuationKind => k })

  /** The query's result columns (below the sink's write node, which outputs nothing). */
  def queryOutput(plan: SparkPlan): Seq[Attribute] =
    if (plan.output.isEmpty && plan.children.size == 1) queryOutput(plan.children.head) else plan.output
}
