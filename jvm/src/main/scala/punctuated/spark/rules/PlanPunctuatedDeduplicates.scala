package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Alias
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, ProjectExec, SparkPlan}
import punctuated.compat.{EventTimeWatermarkExec, StreamingDeduplicateExec}

import punctuated.checkpoint.{CheckpointDeclarations, OncePerRun, OperatorRecords, PerRun, StateLayouts, StateMetadata, StoreSchemas}
import punctuated.conf.PunctuatedConf
import punctuated.dedup.{DeduplicatePartitionWideRows, PunctuatedDeduplicateExec}
import punctuated.input.{KeyPrefix, PunctuationKind, PunctuationTag}
import punctuated.input.Watermarks

/**
 * Physical rule (before columnar transitions, after Spark's incremental planner): a
 * `StreamingDeduplicateExec` whose input carries a `punctuation_kind` column becomes a
 * [[PunctuatedDeduplicateExec]] with the same key and state location.
 */
case class PlanPunctuatedDeduplicates(session: SparkSession) extends ColumnarRule {

  // the checkpoint checks and writes of each operator: at a run's first micro-batch
  private val once = new OncePerRun
  // the key positions each operator's shuffle hashes by (None: all), decided at a run's start
  private val partitionings = new PerRun[Option[Seq[Int]]]
  // the Hadoop conf the operators' tasks open their extra stores with: broadcast once per run
  private val hadoopConfs = new punctuated.state.HadoopConfPerRun(session)

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = {
      val conf = PunctuatedConf(session.sessionState.conf)
      val projected = plan.collect { case p: ProjectExec => p.projectList }.flatten.collect {
        case a @ Alias(k: PunctuationKind, _) => a.exprId -> k
      }
      // and as carried by the tag of the filter above each deduplication (also where the
      // projection computing the column was replaced by an empty relation)
      val kinds = (projected ++ PunctuationTag.kinds(plan.flatMap(_.expressions))).toMap
      if (kinds.isEmpty) plan
      else {
        val results = PlanPunctuatedAggregates.queryOutput(plan).map(_.exprId).toSet
        // withWatermark operators of the query: with several, the policy decides the global watermark
        val watermarks = plan.collect { case w: EventTimeWatermarkExec => w }.size
        val coPartitioned = KeyPrefix.coPartitioned(plan) {
          case d: StreamingDeduplicateExec if d.stateInfo.isDefined => d.stateInfo.get.operatorId
        }
        plan.transformUp {
          case d: StreamingDeduplicateExec if d.stateInfo.isDefined &&
              d.child.output.exists(a => kinds.contains(a.exprId)) =>
            val kindAttr = d.child.output.find(a => kinds.contains(a.exprId)).get
            val own = kinds(kindAttr.exprId)
            // its punctuations are used by a punctuated operator downstream (which reads some
            // of its output columns), or by the results (emitPunctuations, marker selected)
            val inside = d.collect { case p: ProjectExec => p.projectList }.flatten
              .flatMap(_.collect { case k: PunctuationKind => k })
            val outside = projected.map(_._2).filterNot(k => (k eq own) || inside.exists(_ eq k))
            val outputIds = d.output.map(_.exprId).toSet
            val markerNames = own.sources.flatMap(s => own.children(s.marker).references).map(_.name).toSet
            val markers = d.output.filter(a => markerNames.contains(a.name)).map(_.exprId)
            // hashed by the key columns every part-of-key scheme fixes (a new checkpoint; else as
            // it was started, KeyPrefix): punctuations of a range or another part of the key go
            // to every partition
            val keyLength = d.keyExpressions.size
            val prefix = ReplicatingShuffles.prefix(session, d.stateInfo.get, own.layout, keyLength, coPartitioned,
              partitionings)
            val wide = KeyPrefix.replicated(own.layout, keyLength, prefix)
            val (child, replicated) = ReplicatingShuffles.replace(d.child, KeyPrefix.partitioning(prefix, keyLength)) {
              output =>
                val ordinal = output.indexWhere(_.exprId == kindAttr.exprId)
                if ((wide.isEmpty && prefix.isEmpty) || ordinal < 0) None
                else Some(DeduplicatePartitionWideRows(ordinal, wide))
            }
            val partitionedBy = ReplicatingShuffles.applied(prefix, replicated)
            val exec = PunctuatedDeduplicateExec(
              keyExpressions = d.keyExpressions,
              kindOrdinal = d.child.output.indexWhere(_.exprId == kindAttr.exprId),
              stateInfo = d.stateInfo,
              layout = own.layout,
              replicated = replicated,
              emit = outside.exists(_.references.exists(a => outputIds.contains(a.exprId))) ||
                (conf.emitPunctuations && markers.exists(results.contains)),
              settings = conf,
              eventTimeWatermark = d.eventTimeWatermarkForEviction,
              useWatermark = own.layout.watermarks.nonEmpty && Watermarks.usable(
                session.sessionState.conf, watermarks, "deduplication", own.layout.watermarks.map(_.time.name)),
              child = child)
            exec.copyTagsFrom(d)
            hadoopConfs.attach(exec, d.stateInfo.get)
            once(d.stateInfo.get) {
              val hadoopConf = session.sessionState.newHadoopConf()
              // before any of its state stores is opened: the state's declarations are followable
              CheckpointDeclarations.verify(d.stateInfo.get, OperatorRecords.keyed(exec.shortName,
                StateLayouts.Deduplicate, exec.stateStoreNames, own, partitionedBy),
                hadoopConf)
              // Spark's metadata and schema files describe its deduplication: ours replace them
              StateMetadata.write(d.stateInfo.get, d.shortName, StoreSchemas.deduplicate(exec), session,
                hadoopConf)
            }
            exec
        }
      }
    }
  }
}
