package punctuated.spark.rules

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.WriteToStreamStatement
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.input.{BandBucketColumns, DeclaredStreams, PunctuatedInput, PunctuationColumns}
import punctuated.join.KeySchemes
import punctuated.join.multi.MultiJoinGroups
import punctuated.spark.JoinGraph

/**
 * The start-time safety check, run when a streaming query starts: in a query that reads at
 * least one declared stream, every stream-stream join state must be purgeable (Li et al.
 * 2006, Theorem 1 for a binary join: an input's stored rows can be purged iff the *other*
 * input has a punctuation scheme on join attributes), and every aggregation and
 * deduplication must be closed by the punctuations that reach it ([[StatefulSafety]],
 * Tucker et al. 2003, §5.2). By `spark.punctuated.safety.mode`: `strict` fails `start()`
 * naming the unpurgeable input or operator, the scheme that would fix it and how; `warn` logs
 * the same text; `off` checks nothing. With `spark.punctuated.shedding.maxStateRows` set, the
 * unpurgeable inputs of binary punctuated inner joins are bounded by the budget: accepted with a
 * warning that results may be partial, and shedding where results would be wrong is refused
 * ([[SheddingSafety]]).
 *
 * It is an analyzer rule of the hint batch, which runs before Spark's own resolution of the
 * `start()` statement (`WriteToStreamStatement`), where Spark checks the output mode
 * (`UnsupportedOperationChecker`): so an unsafe aggregation in append mode gets this error,
 * not Spark's generic `STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION`. It changes no plan.
 *
 * A group of inner joins that runs as one multi-way join ([[punctuated.join.multi.MultiJoinGroups]],
 * by `spark.punctuated.join.plan`) is judged as one operator ([[MultiJoinSafety]], Li et al.
 * 2006, Theorems 2/4); every other join of the plan is judged on its own (Theorem 1), and an
 * input that is itself a punctuated join's output carries the key schemes that join passes on
 * (its derived declaration; Li et al. §4, binary join trees). `punctuated.check_safety` in Python applies the same rule to
 * the same join tree (its `plan` verdict; shared vectors `testdata/safety_vectors.json`) and
 * reads the aggregation/deduplication verdicts of [[StatefulSafety]] itself.
 */
case class CheckJoinSafety(session: SparkSession) extends Rule[LogicalPlan] with Logging {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan match {
      case w: WriteToStreamStatement => check(w.inputQuery)
      case _ =>
    }
    plan
  }

  private def check(query: LogicalPlan): Unit = {
    val conf = PunctuatedConf(session.sessionState.conf)
    val mode = conf.safetyMode
    val declared = DeclaredStreams.find(query, caseSensitive = false).nonEmpty
    // load shedding where results would be wrong is refused whatever the mode
    if (declared) SheddingSafety.refuse(query, conf)
    // a band without an equality predicate is refused whatever the mode (TimeBandSafety)
    if (declared) TimeBandSafety.refuseBandOnly(query)
    if (mode != "off" && declared) {
      val (problems, bounded) = JoinSafety.startProblems(query, conf)
      if (bounded.nonEmpty) logWarning(SheddingSafety.warning(bounded, conf))
      if (problems.nonEmpty) {
        val text = problems.map(_.message).mkString("\n")
        if (mode == "strict") throw PunctuatedErrors.unsafeQuery(text)
        logWarning(s"Punctuated: the query's state will grow without bound.\n$text")
      }
    }
  }
}

/** Per-join purgeability, one place for the check and its messages. */
object JoinSafety {

  /** A join input whose state can never be purged, and the sentence saying how to fix it. */
  final case class Problem(input: String, message: String)

  /**
   * What the start-time check ([[CheckJoinSafety]]) finds in a query reading declared streams:
   * the problems that make `strict` fail (unpurgeable join state that no shedding budget bounds,
   * then aggregations and deduplications that are never closed), and the unpurgeable join inputs
   * the budget of `spark.punctuated.shedding.maxStateRows` bounds (accepted with a warning).
   * One place for `start()` and the SQL table function `punctuated_check_safety`.
   */
  def startProblems(query: LogicalPlan, conf: PunctuatedConf): (Seq[Problem], Seq[Problem]) = {
    // with shedding on, the budget bounds the binary joins' unpurgeable state (partial results)
    val (bounded, unbounded) = SheddingSafety.split(query, conf)
    (unbounded ++ StatefulSafety.problems(query), bounded)
  }

  /**
   * The verdict on one stream-stream join of a plan (Li et al. 2006, Theorem 1 for a binary
   * join, Corollary 1: an input's state is purgeable iff the other input carries punctuations
   * on join attributes). An input that is itself a punctuated join's output carries the key
   * schemes that join propagates (its derived declaration).
   *
   * @param join     the join
   * @param left     the left input's name: a stream, or `(a ⋈ b)` for a join's output
   * @param right    the right input's name
   * @param purgeable whether the left and the right input's state is purgeable
   * @param problems one per unpurgeable input
   */
  final case class Verdict(join: Join, left: String, right: String, purgeable: (Boolean, Boolean),
      problems: Seq[Problem])

  /**
   * One problem per unpurgeable join input: of each group that runs as one multi-way join
   * (judged as a whole, [[MultiJoinSafety]]), then of every other join (judged one by one).
   *
   * @param conf the session's settings (`spark.punctuated.join.plan` decides the groups)
   */
  def problems(plan: LogicalPlan, conf: PunctuatedConf = PunctuatedConf(SQLConf.get)): Seq[Problem] =
    MultiJoinSafety.verdicts(plan, conf).flatMap(_.problems) ++ verdicts(plan, conf).flatMap(_.problems)

  /**
   * The verdict on each stream-stream equi-join of the plan that runs as a binary join,
   * children before parents: joins of a group that runs as one multi-way join are judged by
   * [[MultiJoinSafety.verdicts]] instead (with `spark.punctuated.join.plan=written`, none is).
   */
  def verdicts(plan: LogicalPlan, conf: PunctuatedConf = PunctuatedConf(SQLConf.get)): Seq[Verdict] = {
    val watermarked = plan.exists(_.isInstanceOf[EventTimeWatermark])
    val watermarks = KeyWatermarkSafety.count(plan)
    lazy val graph = JoinGraph.of(plan, caseSensitive = false)
    val grouped = MultiJoinGroups.of(plan, conf.joinPlan, conf.emitPunctuations).flatMap(_.joins)
    val out = scala.collection.mutable.ArrayBuffer.empty[Verdict]
    plan.foreachUp {
      case j: Join if grouped.exists(_ eq j) =>
      case j @ ExtractEquiJoinKeys(_, leftKeys, rightKeys, otherCondition, _, left, right, _)
          if left.isStreaming && right.isStreaming =>
        val join = j.asInstanceOf[Join]
        PunctuationColumns.find(join.condition) match {
          case Some(mark) =>
            val lName = name(mark.left, left, "left")
            val rName = name(mark.right, right, "right")
            val on = leftKeys.zip(rightKeys).map { case (l, r) => s"${l.sql} = ${r.sql}" }.mkString(" AND ")
            // a time band purges an input whose band the other input's range on time closes
            val band = TimeBandSafety.of(otherCondition, left, right, mark.left, mark.right)
            // without a band, a watermark on the other input's join key is its range punctuation
            def keyMark(keys: Seq[Expression], input: LogicalPlan) =
              band.terms.isEmpty && KeyWatermarkSafety.column(keys, input, watermarks).isDefined
            // a band-only join runs on time buckets (BucketBandOnlyJoins): only its band purges
            val bucketed = leftKeys.nonEmpty && leftKeys.forall(BandBucketColumns.isBucket)
            val lp = if (bucketed) band.bandOnlyProblem(0, lName, rName) else
              missing(lName, rName, mark.right, rightKeys, right, on, graph)
                .filterNot(_ => band.purgeable(0) || keyMark(rightKeys, right)).map(band.withFix(0, rName, _))
            val rp = if (bucketed) band.bandOnlyProblem(1, rName, lName) else
              missing(rName, lName, mark.left, leftKeys, left, on, graph)
                .filterNot(_ => band.purgeable(1) || keyMark(leftKeys, left)).map(band.withFix(1, lName, _))
            out += Verdict(join, lName, rName, (lp.isEmpty, rp.isEmpty), (lp ++ rp).toSeq)
          case None =>
            val problems = if (watermarked) Nil else
              Seq(Problem("both inputs", s"The stream-stream join ON ${join.condition.map(_.sql).getOrElse("true")} " +
                "reads no declared input: both inputs' state grows without bound. Fix: declare " +
                "punctuation schemes on its inputs (TBLPROPERTIES 'punctuated.schemes' or " +
                "'punctuated.unique') or use a watermark."))
            out += Verdict(join, name(None, left, "left"), name(None, right, "right"),
              (watermarked, watermarked), problems)
        }
      case _ =>
    }
    out.toSeq
  }

  /** The problem of input `stored`, if `other` carries no punctuations on its join keys. */
  private def missing(stored: String, other: String, otherDecl: Option[PunctuatedInput],
      otherKeys: Seq[Expression], otherInput: LogicalPlan, on: String, graph: => JoinGraph): Option[Problem] = {
    val usable = otherDecl.toSeq.flatMap(d => KeySchemes.usable(d, otherKeys))
      .filter { case (s, _) => otherDecl.exists(_.hasPunctuations(s)) }
    if (usable.nonEmpty) None
    else Some(Problem(stored, {
      val keyCols = otherKeys.map(_.sql).mkString(", ")
      // the other input is a stream-stream join's output (declared or not): no declaration of
      // one stream makes it pass on punctuations of columns that are not its own join key
      val joinOutput = otherDecl.flatMap(_.declaration.derived).isDefined || otherInput.exists {
        case j: Join => j.left.isStreaming && j.right.isStreaming
        case _ => false
      }
      val fix = if (joinOutput) {
          s"input $other is the output of a join, which passes on punctuations only for join-key " +
            s"values both its inputs close with the same scheme. Fix: join $other's inputs on the " +
            s"columns equal to ($keyCols), with the same punctuation scheme on them on both inputs; " +
            "or read a stream that closes no key of the joins above it as a static table, joined " +
            "after the stream-stream joins (JOIN t ON ..., not JOIN STREAM(t)): a stream-static " +
            "join keeps no state"
        } else {
          // a scheme on the key columns of one stream of that input, as printed applicable
          val traced = otherKeys.flatMap(k => SafetyFixes.column(graph, k))
          traced.headOption.map(_.stream) match {
            case Some(stream) =>
              val columns = traced.filter(_.stream == stream).map(_.name).distinct
              SafetyFixes.declare(stream, columns, otherInput) +
                s" (or declare ${columns.mkString(", ")} as the unique key of ${stream.name} if it is one)"
            case None => SafetyFixes.expressionKey(otherKeys.head)
          }
        }
      s"The state of input $stored of the join ON $on can never be purged: input " +
        s"$other has no punctuation scheme on its join key ($keyCols) whose punctuations " +
        s"reach the join. Fix: $fix; or set ${PunctuatedConf.SafetyMode}=warn to run anyway."
    }))
  }

  private def name(decl: Option[PunctuatedInput], input: LogicalPlan, side: String): String =
    decl.map(d => if (d.declaration.derived.isDefined) d.declaration.table else d.declaration.table.split('.').last)
      .getOrElse {
        input.collectLeaves().filter(_.isStreaming).map(punctuated.spark.JoinGraph.shortName)
          .distinct.mkString(", ") match {
          case "" => s"$side input"
          case names => s"$names ($side input)"
        }
      }
}
