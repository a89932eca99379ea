package punctuated.spark.rules

import scala.collection.mutable

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, Expression, Literal}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, FilterExec, ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import punctuated.compat.StatefulOperatorStateInfo
import punctuated.compat.{EventTimeWatermarkExec, StreamingSymmetricHashJoinExec}

import punctuated.checkpoint.{CheckpointDeclarations, MigrationRequests, MultiJoinCheckpoint, PlanLog, PlanRecord}
import punctuated.conf.PunctuatedConf
import punctuated.input.{InputSpec, PunctuatedInput, PunctuationColumns}
import punctuated.join.WatermarkPunctuations
import punctuated.join.multi.{Hypercube, MultiJoinExchangeExec, MultiJoinGroups, MultiJoinInputSpec, MultiJoinMemberExec, MultiJoinMigration, MultiJoinObserved, MultiJoinPlan, MultiJoinShareWeights, MultiJoinStatistics, MultiJoinTree, PlanChoice, PlanCost, PunctuatedMultiJoinExec, PunctuationReach}

/**
 * Physical rule (before columnar transitions; registered before [[PlanPunctuatedJoins]]): the
 * Spark joins of a group that runs as one multi-way join — stamped with the group's number by
 * [[MarkMultiWayJoins]] — become one [[PunctuatedMultiJoinExec]] with the uppermost join's
 * state location (Spark numbers its stateful operators top-down: the group's other joins'
 * operator ids keep no state). Below each input, Spark's exchange (which partitioned it by the
 * key of the one join that read it) becomes a [[MultiJoinExchangeExec]] routing it to the
 * cells of the [[Hypercube]] chosen for the group.
 *
 * {{{
 *   StreamingSymmetricHashJoin(b.v = c.v) [group 0]         PunctuatedMultiJoin(a, b, c)
 *     Exchange(hash b.v)                                      MultiJoinExchange(a)  scan a
 *       StreamingSymmetricHashJoin(a.k = b.k) [group 0]  =>   MultiJoinExchange(b)  scan b
 *         Exchange(hash a.k)  scan a                          MultiJoinExchange(c)  scan c
 *         Exchange(hash b.k)  scan b
 *     Exchange(hash c.v)  scan c
 * }}}
 *
 * The plan tree inside the operator ([[MultiJoinPlan]]) is chosen in one place (`val plan`
 * in `build`): the running query's newest request ([[MigrationRequests]]), else a tree `spark.punctuated.join.plan` spells, checked against the group
 * ([[writtenTree]]); the MJoin (`mjoin`); for `auto` the plan log's plan, else the cheapest
 * safe plan under the recorded statistics or the defaults ([[autoPlan]]). The plan log's recorded plan must
 * have the same shape ([[MultiJoinCheckpoint.planInForce]]); when its tree is another, the
 * batch migrates to the chosen one ([[MultiJoinMigration]]).
 *
 * Between the group's joins only exchanges, filters (their conditions are applied to each
 * result) and column-selecting projections occur ([[MultiJoinGroups]]). A group whose physical
 * plan has anything else stays the tree of binary joins [[PlanPunctuatedJoins]] plans (logged).
 */
case class PlanPunctuatedMultiJoins(session: SparkSession) extends ColumnarRule with Logging {

  // the Hadoop conf the operator's tasks open their stores with: broadcast once per run
  private val hadoopConfs = new punctuated.state.HadoopConfPerRun(session)

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = {
      // withWatermark operators of the query: with several, the policy decides the global watermark
      val watermarks = plan.collect { case w: EventTimeWatermarkExec => w }.size
      // with a watermark, Spark's per-operator propagation needs the group's lower joins' ids
      val members = watermarks > 0 &&
        session.sessionState.conf.getConf(org.apache.spark.sql.internal.SQLConf.STATEFUL_OPERATOR_ALLOW_MULTIPLE)
      plan.transformDown {
        case j: StreamingSymmetricHashJoinExec if j.stateInfo.isDefined && groupOf(j).isDefined =>
          build(j, groupOf(j).get, members, watermarks).getOrElse(j)
      }
    }
  }

  private def groupOf(j: StreamingSymmetricHashJoinExec): Option[Int] =
    PunctuationColumns.find(j.condition.full).flatMap(_.multiJoin)

  /** One input of the group as found below its joins. */
  private final case class Found(plan: SparkPlan, declaration: Option[PunctuatedInput])

  /**
   * The group of `top` as one multi-way join; with `members`, below one
   * [[MultiJoinMemberExec]] per lower join of the group (Spark's watermark propagation looks
   * them up by operator id).
   */
  private def build(top: StreamingSymmetricHashJoinExec, group: Int, members: Boolean,
      watermarks: Int): Option[SparkPlan] = {
    val inputs = mutable.ArrayBuffer.empty[Found]
    val equalities = mutable.ArrayBuffer.empty[(Attribute, Attribute)]
    val filters = mutable.ArrayBuffer.empty[Expression]
    var unexpected = Option.empty[SparkPlan]

    /** The group's join below `node` through exchanges, filters and projections, if any. */
    def below(node: SparkPlan, passed: Seq[Expression]): Option[(StreamingSymmetricHashJoinExec, Seq[Expression])] =
      node match {
        case j: StreamingSymmetricHashJoinExec if groupOf(j).contains(group) => Some(j -> passed)
        case s: ShuffleExchangeExec => below(s.child, passed)
        case f: FilterExec => below(f.child, passed :+ f.condition)
        case p: ProjectExec if p.projectList.forall(_.isInstanceOf[Attribute]) => below(p.child, passed)
        case _ => None
      }

    def walk(j: StreamingSymmetricHashJoinExec): Unit = {
      val mark = PunctuationColumns.find(j.condition.full).get
      j.leftKeys.zip(j.rightKeys).foreach {
        case (l: Attribute, r: Attribute) => equalities += (l -> r)
        case _ => unexpected = Some(j)
      }
      filters ++= j.condition.full.toSeq.flatMap(conjuncts)
        .filterNot(_.isInstanceOf[PunctuationColumns]).filterNot(_ == Literal.TrueLiteral)
      Seq((j.left, mark.left), (j.right, mark.right)).foreach { case (child, declaration) =>
        below(child, Nil) match {
          case Some((lower, passed)) => filters ++= passed; walk(lower)
          case None => inputs += Found(withoutExchange(child), declaration)
        }
      }
    }
    walk(top)

    val classes = MultiJoinGroups.inInputOrder(MultiJoinGroups.attributeClasses(equalities.toSeq),
      inputs.map(_.plan.output).toSeq)
    val specs = inputs.zipWithIndex.map { case (in, i) =>
      val columns = classes.zipWithIndex.flatMap { case (cls, c) =>
        cls.filter(a => in.plan.outputSet.contains(a)).map(c -> _)
      }
      (in, i, columns)
    }
    val oneColumnPerClass = specs.forall { case (_, _, cols) => cols.map(_._1).distinct.size == cols.size }
    if (unexpected.isDefined || inputs.size < 3 || !oneColumnPerClass) {
      logWarning(s"Punctuated: the joins of multi-way group $group keep the tree of binary joins " +
        s"(unexpected physical plan${unexpected.map(p => s": ${p.nodeName}").getOrElse("")})")
      None
    } else {
      val conf = PunctuatedConf(session.sessionState.conf)
      val info = top.stateInfo.get
      // a watermark on an input's join column is its range punctuation ts<=w there (sound policy only)
      val sound = WatermarkPunctuations.soundPolicy(session.sessionState.conf, watermarks)
      val planned = specs.map { case (in, i, cols) =>
        val keys = cols.map(_._2).toSeq
        MultiJoinInputSpec(i, WatermarkPunctuations.onKey(InputSpec.of(in.declaration, keys, in.plan.output), keys,
          in.plan, sound), keys, cols.map(_._1).toSeq)
      }.toIndexedSeq
      val classTypes = classes.map(_.head.dataType)
      val names = inputs.map(in => MultiJoinCheckpoint.inputName(in.declaration, in.plan.output)).toSeq
      val recorded = PlanLog.latest(CheckpointDeclarations.operatorDir(info), session.sessionState.newHadoopConf())
      // the shares: the plan log's win (planInForce); before any record, weighed by the first
      // batch's rows (MultiJoinShareWeights) unless shareWeights=equal
      val weights = if (recorded.isDefined || conf.shareWeights == "equal" || info.numPartitions == 1 ||
        classes.size == 1) None
      else MultiJoinShareWeights.firstBatch(session, planned.zip(inputs.map(_.plan)).toSeq, classes.size)
      val cube = weights.map(Hypercube.chooseWeighted(info.numPartitions, _, classes.size))
        .getOrElse(Hypercube.choose(info.numPartitions, planned.map(_.classes), classes.size))
      val seen = planned.map(in => PunctuationReach.Input(names(in.number), in.classes.toSet,
        in.spec.keySchemes.map(s => in.schemeClasses(s).toSet)))
      // what the previous batch showed, else what the plan log carries, else the defaults
      val stats = observed(info, planned).getOrElse(PlanChoice.statistics(recorded.flatMap(_.statistics), seen))
      // the plan tree (the one place the plan is chosen)
      // a running query's newest request (punctuated.migrate) wins over the setting until `auto`
      val request = MigrationRequests.newest(MigrationRequests.rootOf(info.checkpointLocation), names,
        session.sessionState.newHadoopConf())
      val plan = (request.map(_.plan), conf.joinTree) match {
        case (Some("mjoin"), _) => MultiJoinPlan.mjoin(planned.size)
        case (Some(text), _) => writtenTree(text, names, planned)
        case (None, Some(text)) => writtenTree(text, names, planned)
        case (None, None) if conf.joinPlan == "mjoin" => MultiJoinPlan.mjoin(planned.size)
        case (None, None) => autoPlan(recorded, names, planned, seen, stats, info.storeVersion, conf)
      }
      // the plan in force for this batch: the shares the state was placed by win (plan log)
      // (after a recorded plan of another tree, this batch migrates to it: MultiJoinMigration)
      val inForce = MultiJoinCheckpoint.planInForce(info, names, planned, cube.shares, plan, session,
        conf.migrationStrategy).copy(statistics = Some(stats))
      val inForceWith = if (inForce.request.isDefined) inForce else inForce.copy(request = request.map(_.number))
      val exchanges = planned.zip(inputs).map { case (spec, in) =>
        MultiJoinExchangeExec(spec, classTypes, inForce.shares, in.plan)
      }
      val exec = PunctuatedMultiJoinExec(
        inputs = planned,
        classTypes = classTypes,
        condition = filters.reduceOption(And),
        projection = top.output,
        stateInfo = top.stateInfo,
        settings = conf.copy(emitPunctuations = false),
        shares = inForce.shares,
        children = exchanges,
        plan = inForce.tree,
        // the MJoin's probe orders follow the statistics (they do not affect the state)
        probeOrders = if (inForce.tree.isMJoin) PlanCost.probeOrders(inForce.tree, stats) else Nil,
        nodeStores = inForce.storedNodes,
        migration = inForce.migration,
        eventTimeWatermark = top.eventTimeWatermarkForEviction)
      exec.copyTagsFrom(top)
      hadoopConfs.attach(exec, top.stateInfo.get)
      val lower = top.collect { case j: StreamingSymmetricHashJoinExec if (j ne top) && groupOf(j).contains(group) => j }
        .flatMap(_.stateInfo)
      // before any of its state stores is opened: record, plan log, state metadata
      MultiJoinCheckpoint.record(exec, inputs.map(_.declaration).toSeq, inForceWith, top.shortName, lower, session)
      Some(if (members) lower.foldLeft(exec: SparkPlan)((p, m) => MultiJoinMemberExec(Some(m), p)) else exec)
    }
  }

  /**
   * The tree `spark.punctuated.join.plan` spells, over this group's inputs: fails at planning,
   * naming the setting, the text, the group's inputs and an example, when it does not fit
   * (other inputs, or a node whose children share no join column).
   */
  private def writtenTree(text: String, names: Seq[String], planned: Seq[MultiJoinInputSpec]): MultiJoinPlan.Join = {
    def fail(why: String) = throw new IllegalArgumentException(s"${PunctuatedConf.JoinPlan}='$text' does not fit " +
      s"the multi-way join of ${names.mkString(", ")}: $why. Write a tree of these inputs' names whose every " +
      s"node joins inputs sharing a join column, e.g. ${MultiJoinPlan.leftDeep(names.indices).text(names)}, " +
      s"or use auto, mjoin or written")
    val tree = try MultiJoinPlan.parse(text, names) catch { case e: IllegalArgumentException => fail(e.getMessage) }
    MultiJoinTree.problem(tree, planned.map(_.classes).toIndexedSeq, names).foreach(fail)
    tree.canonical.asInstanceOf[MultiJoinPlan.Join]
  }

  /**
   * The plan `auto` runs: the plan the checkpoint's plan log records for these inputs (a
   * restart continues the plan its state was written under), re-chosen every
   * `spark.punctuated.join.replanEvery` batches ([[replan]]); else the cheapest safe plan
   * ([[PlanChoice]]) under `stats` (the recorded statistics or the defaults).
   */
  private def autoPlan(recorded: Option[PlanRecord], names: Seq[String], planned: Seq[MultiJoinInputSpec],
      seen: Seq[PunctuationReach.Input], stats: MultiJoinStatistics, batch: Long, conf: PunctuatedConf): MultiJoinPlan.Join = {
    val classes = PlanRecord.mjoin(names, planned, Seq.fill(planned.flatMap(_.classes).max + 1)(1)).classes
    recorded.filter(r => r.inputs.size == planned.size && r.classes == classes).map(_.tree) match {
      case Some(current) if conf.replanEvery > 0 && batch > 0 && batch % conf.replanEvery == 0 =>
        PunctuatedMultiJoinReplan.replan(current, PlanChoice.choose(seen, stats), stats, conf.replanThreshold)
      case Some(current) => current
      case None => PlanChoice.choose(seen, stats)
    }
  }

  /**
   * The statistics the previous micro-batch of this operator observed ([[MultiJoinObserved]]):
   * from the running query's last progress (the query whose run id is the state's), its one
   * multi-way join of these inputs' classes. None on a query's first batch after a start, or
   * when several such joins report (their progress does not say which is which).
   */
  private def observed(info: StatefulOperatorStateInfo, planned: Seq[MultiJoinInputSpec]): Option[MultiJoinStatistics] = {
    val sessions = (Seq(session) ++ SparkSession.getActiveSession ++ SparkSession.getDefaultSession).distinct
    val query = sessions.iterator.flatMap(s => scala.util.Try(s.streams.active.toSeq).getOrElse(Nil))
      .find(_.runId == info.queryRunId)
    val progress = query.flatMap(q => Option(q.lastProgress)).filter(_.batchId < info.storeVersion)
    val found = progress.toSeq.flatMap(_.stateOperators.toSeq)
      .flatMap(MultiJoinObserved.fromProgress(_, planned.map(_.classes)))
    if (found.size == 1) found.headOption else None
  }

  /** The input without the exchange Spark placed for the one join that read it. */
  private def withoutExchange(plan: SparkPlan): SparkPlan = plan match {
    case s: ShuffleExchangeExec => s.child
    case f: FilterExec => f.withNewChildren(Seq(withoutExchange(f.child)))
    case p: ProjectExec => p.withNewChildren(Seq(withoutExchange(p.child)))
    case other => other
  }

  private def conjuncts(e: Expression): Seq[Expression] = e match {
    case And(a, b) => conjuncts(a) ++ conjuncts(b)
    case other => Seq(other)
  }
}

/**
 * `auto` re-planning with hysteresis: the best plan under the observed statistics replaces the
 * current one only if its cost is below (1 - `threshold`) times the current plan's cost under
 * the same statistics ([[PlanCost.cost]]), so small or noisy differences do not make the plan
 * flap (each switch migrates state: [[punctuated.join.multi.MultiJoinMigration]]).
 *
 * {{{
 *   current cost 100, best 85, threshold 0.2:  85 >= 80 -> keep the current plan
 *   current cost 100, best 70, threshold 0.2:  70 <  80 -> switch to the best
 * }}}
 */
object PunctuatedMultiJoinReplan {
  def replan(current: MultiJoinPlan.Join, best: MultiJoinPlan.Join, stats: MultiJoinStatistics,
      threshold: Double): MultiJoinPlan.Join =
    if (best == current || PlanCost.cost(best, stats) >= (1 - threshold) * PlanCost.cost(current, stats)) current
    else best
}
