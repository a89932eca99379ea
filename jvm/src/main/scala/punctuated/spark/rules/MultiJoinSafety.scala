package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

import punctuated.conf.PunctuatedConf
import punctuated.join.KeySchemes
import punctuated.join.multi.{MultiJoinGroup, MultiJoinGroups, PunctuationReach}
import punctuated.spark.JoinGraph

/**
 * The safety of a group of joins that runs as one multi-way join ([[MultiJoinGroups]]),
 * judged as ONE operator by Li et al. 2006, §4.1.1–4.2: Definitions 7 and 8 (the
 * (generalized) punctuation graph), Definition 9 (reachability) and Theorems 2 and 4 — a
 * stored row of input i can be purged by the chained purge (§3.2) iff i reaches every other
 * input. Input i reaches input j when j has a purging scheme whose attribute classes are all
 * classes of the inputs already reached: their values are then known, so j's punctuations on
 * them close j for every partial result (the schema-level closure of the chained purge the
 * operator runs).
 *
 * {{{
 *   a(k) JOIN b(k, v) ON a.k = b.k JOIN c(v) ON b.v = c.v       classes 0 = {a.k, b.k}, 1 = {b.v, c.v}
 *   schemes: a "k", b "k; v", c "v"  -> a {0}, b {0}, {1}, c {1}
 *   a reaches b (b's scheme {0}), then c (c's {1}, class 1 bound through b): every input
 *   reaches every other, the group is safe (Theorem 2), although the tree of binary joins
 *   written is not (the join above passes on punctuations of its own key only).
 * }}}
 *
 * Pure functions over class sets ([[reach]], [[unpurgeable]], [[fix]]), and the verdict on a
 * group of a plan ([[verdicts]]) with the message of each unpurgeable input, in the style of
 * [[JoinSafety]]'s: the input, the joins' predicates, which input lacks which scheme, and the
 * statement that declares the smallest extra scheme making it reach every input.
 */
object MultiJoinSafety {

  /** One input as the punctuation graph sees it ([[PunctuationReach.Input]]). */
  type Input = PunctuationReach.Input
  val Input: PunctuationReach.Input.type = PunctuationReach.Input

  /**
   * The verdict on one group.
   *
   * @param group     the group
   * @param inputs    its inputs' names, in input order
   * @param purgeable per input, whether its stored rows can be purged
   * @param problems  one per unpurgeable input
   */
  final case class Verdict(group: MultiJoinGroup, inputs: Seq[String], purgeable: Seq[Boolean],
      problems: Seq[JoinSafety.Problem])

  /** The inputs `from` reaches in the generalized punctuation graph ([[PunctuationReach.reach]]). */
  def reach(inputs: Seq[Input], from: Int): Set[Int] = PunctuationReach.reach(inputs, from)

  /** The inputs that do not reach every other input ([[PunctuationReach.unpurgeable]]). */
  def unpurgeable(inputs: Seq[Input]): Seq[Int] = PunctuationReach.unpurgeable(inputs)

  /**
   * The smallest extra schemes making input `i` reach every input: (input, class) pairs, each a
   * one-column scheme on that input's column in that class. One scheme if one suffices (the
   * first in input and class order), else one per step of a greedy chain: each time the first
   * unreached input sharing a class with the reached ones gets a scheme on it (the inputs of a
   * group are connected by its equalities, so this ends).
   */
  def fix(inputs: Seq[Input], i: Int): Seq[(Int, Int)] = {
    def withScheme(j: Int, c: Int) = inputs.updated(j, inputs(j).copy(schemes = inputs(j).schemes :+ Set(c)))
    val candidates = for {
      j <- inputs.indices if j != i
      c <- inputs(j).classes.toSeq.sorted
    } yield (j, c)
    candidates.find { case (j, c) => reach(withScheme(j, c), i).size == inputs.size } match {
      case Some(one) => Seq(one)
      case None =>
        var current = inputs
        val out = Seq.newBuilder[(Int, Int)]
        var reached = reach(current, i)
        var next: Option[(Int, Int)] = Some((-1, -1))
        while (reached.size < inputs.size && next.isDefined) {
          val bound = reached.flatMap(current(_).classes)
          next = inputs.indices.filterNot(reached).flatMap { j =>
            current(j).classes.toSeq.sorted.find(bound).map(j -> _)
          }.headOption
          next.foreach { case (j, c) =>
            out += ((j, c))
            current = current.updated(j, current(j).copy(schemes = current(j).schemes :+ Set(c)))
            reached = reach(current, i)
          }
        }
        out.result()
    }
  }

  /**
   * The graph's view of a group's inputs: classes, and purging schemes over the class columns
   * — declared ones, and the range scheme a watermark on a join column is
   * ([[KeyWatermarkSafety.column]]; `watermarks`: the query's `withWatermark` operators).
   */
  def inputs(group: MultiJoinGroup, watermarks: Int = 0): Seq[Input] = group.inputs.indices.map { i =>
    val cols = group.classColumns(i)
    val decl = group.inputs(i).declaration
    val schemes = decl.toSeq.flatMap(d => KeySchemes.usable(d, cols.map(_._2)))
      .filter { case (s, _) => decl.exists(_.hasPunctuations(s)) }
      // a range attribute (`v<=`) binds its class as a constant does (Li et al. 2006, §4.2),
      // each of a scheme's several ranges too (its punctuation closes a region of them)
      .map { case (_, k) => (k.constants.toSet ++ k.ranges.map(_._1)).map(cols(_: Int)._1) }
    val watermark = KeyWatermarkSafety.column(cols.map(_._2), group.inputs(i).plan, watermarks)
      .flatMap(w => cols.find(_._2.exprId == w.exprId)).map(c => Set(c._1))
    Input(name(group, i), cols.map(_._1).toSet, (schemes ++ watermark).distinct)
  }

  /** The verdict on each group of `plan` that runs as one multi-way join (uppermost first). */
  def verdicts(plan: LogicalPlan, conf: PunctuatedConf): Seq[Verdict] = {
    lazy val graph = JoinGraph.of(plan, caseSensitive = false)
    val watermarks = KeyWatermarkSafety.count(plan)
    MultiJoinGroups.of(plan, conf.joinPlan, conf.emitPunctuations).map(g => verdict(g, graph, watermarks))
  }

  private def verdict(g: MultiJoinGroup, graph: => JoinGraph, watermarks: Int): Verdict = {
    val ins = inputs(g, watermarks)
    val bad = unpurgeable(ins).toSet
    // the predicates in the order of the inputs they join (as a query lists them)
    val on = g.equalities.sortBy { case (l, r) =>
      val (a, b) = (g.inputOf(l), g.inputOf(r))
      (math.min(a, b), math.max(a, b))
    }.map { case (l, r) => s"${l.sql} = ${r.sql}" }.mkString(" AND ")
    val problems = ins.indices.filter(bad).map { i =>
      val reached = reach(ins, i)
      val missing = fix(ins, i)
      val lacking = missing.map { case (j, c) =>
        val col = g.classColumns(j).find(_._1 == c).get._2
        s"input ${ins(j).name} has no punctuation scheme on ${col.sql}, the column it shares with " +
          s"${g.classes(c).filterNot(_ eq col).map(_.sql).mkString(", ")}"
      }.mkString("; ")
      val statements = missing.groupBy(_._1).toSeq.sortBy(_._1).map { case (j, cs) =>
        declare(g, j, cs.map { case (_, c) => g.classColumns(j).find(_._1 == c).get._2 }, graph)
      }
      val unreached = ins.indices.filterNot(reached).map(ins(_).name).mkString(", ")
      JoinSafety.Problem(ins(i).name,
        s"The state of input ${ins(i).name} of the multi-way join of ${ins.map(_.name).mkString(", ")} " +
          s"ON $on can never be purged (Li et al. 2006, Theorems 2/4: an input's state is purged " +
          s"iff its punctuation graph reaches every other input): from ${ins(i).name} the " +
          s"punctuations never reach $unreached ($lacking). Fix: ${statements.mkString("; and ")}; " +
          s"or set ${PunctuatedConf.SafetyMode}=warn to run anyway.")
    }
    Verdict(g, ins.map(_.name), ins.indices.map(i => !bad(i)), problems)
  }

  /** The statement declaring a one-column scheme on each of input `j`'s columns `cols`. */
  private def declare(g: MultiJoinGroup, j: Int, cols: Seq[Attribute], graph: JoinGraph): String = {
    val traced = cols.flatMap(c => SafetyFixes.column(graph, c))
    traced.headOption.map(_.stream) match {
      case Some(stream) if traced.size == cols.size && traced.forall(_.stream == stream) =>
        SafetyFixes.declareAll(stream, traced.map(t => Seq(t.name)), g.inputs(j).plan) +
          (if (traced.size == 1) s" (or declare ${traced.head.name} as the unique key of ${stream.name} if it is one)" else "")
      case _ => SafetyFixes.expressionKey(cols.head)
    }
  }

  /** Input `i`'s name: as declared, else its streams' names. */
  def name(g: MultiJoinGroup, i: Int): String = {
    val in = g.inputs(i)
    in.declaration.map(_.name.split('.').last).getOrElse {
      in.plan.collectLeaves().filter(_.isStreaming).map(JoinGraph.shortName).distinct.mkString(", ") match {
        case "" => in.name
        case names => names
      }
    }
  }
}
