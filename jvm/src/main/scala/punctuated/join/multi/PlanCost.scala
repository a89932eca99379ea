package punctuated.join.multi

import scala.collection.mutable

import punctuated.join.multi.MultiJoinPlan.{Input, Join}

/**
 * The cost of a multi-way join plan per micro-batch under [[MultiJoinStatistics]] (lower is
 * better), after the MJoin of Viglas et al. 2003 (an arriving row probes the other inputs'
 * states in turn) and the plan parameters of Li et al. 2006, §5.2. The Python package's
 * `punctuated.safety.plan_cost` has the same definition; `testdata/plan_choice_vectors.json`
 * holds both to it.
 *
 *  - A set X of inputs (a leaf, or the inputs an inner node covers) has `delta(X) = Σ_i r_i ·
 *    F(i, X - i)` new rows per batch, `size(X) = min_i S_i · F(i, X - i)` stored rows and, on
 *    class c, `fanout(X, c) = min_j f_j(c) · F(j, X - j)` over its inputs j having c; `F(i, R)`
 *    multiplies the leaf fan-outs along the greedy connected order from i through R.
 *  - At each inner node N, the delta of each child C probes N's other children in the greedy
 *    connected order ([[probeOrder]]: next the child with the smallest fan-out on a class
 *    bound so far, ties to the earlier child): work `delta(C) · (p1 + p1·p2 + ...)`, the
 *    partial results built.
 *  - At a non-root N, one write per new combination (`delta(N)`) and memory `W · size(N)`,
 *    W = 0.01 per row per batch: keeping a row costs far less per batch than building one (it
 *    is written once, read only when probed), so a hundred batches of keeping weigh as much as
 *    building it once. Leaf states are the same in every plan and not counted.
 *
 * Worked example, the chain a(k) ⋈ b(k, v) ⋈ c(v) under the defaults (r = S = 1000, f = 1):
 * {{{
 *   (a ⋈ b ⋈ c):    each input's 1000 rows build 1 + 1 partial results        = 6000
 *   ((a ⋈ b) ⋈ c):  (a ⋈ b): 1000 + 1000 probes, 2000 writes, 0.01 · 1000 = 10 = 4010
 *                   root: (a ⋈ b)'s 2000 new rows probe c, c's 1000 probe (a ⋈ b) = 3000
 *                                                                            total 7010
 * }}}
 */
object PlanCost {
  /** The cost of keeping one intermediate row for one micro-batch. */
  val MemoryWeight = 0.01

  /** The cost of `plan` (children in any order: it is made canonical first). */
  def cost(plan: Join, stats: MultiJoinStatistics): Double = new Model(stats).planCost(plan)

  /**
   * The order in which the delta of `node.children(child)` probes the node's other children
   * (their indices in `node.children`): the greedy connected order. The operator probes in
   * this order; [[cost]] counts it.
   *
   * {{{
   *   probeOrder(mjoin(3), 0, stats)   // a ⋈ b ⋈ c as above: Seq(1, 2), a's rows probe b, then c
   * }}}
   */
  def probeOrder(node: Join, child: Int, stats: MultiJoinStatistics): Seq[Int] =
    new Model(stats).probeOrder(node.children.map(_.inputs.toSet), child).map(_._1)

  /**
   * For each input (by number), the inputs its rows' partial results meet at its parent
   * node, in probe order (each sibling's inputs, increasing): the `probeOrders` of a plan record.
   */
  def probeOrders(plan: Join, stats: MultiJoinStatistics): Seq[Seq[Int]] = {
    val model = new Model(stats)
    val out = mutable.Map.empty[Int, Seq[Int]]
    def visit(j: Join): Unit = {
      val sets = j.children.map(_.inputs.toSet)
      j.children.zipWithIndex.foreach {
        case (Input(i), k) => out(i) = model.probeOrder(sets, k).flatMap { case (d, _) => j.children(d).inputs }
        case (c: Join, _) => visit(c)
      }
    }
    visit(plan.canonical.asInstanceOf[Join])
    (0 until stats.size).map(i => out.getOrElse(i, Nil))
  }

  /** The cost functions over sets of inputs, memoized (one instance per choice). */
  final class Model(stats: MultiJoinStatistics) {
    private val cls: IndexedSeq[Set[Int]] = (0 until stats.size).map(stats.classes)
    private val chains = mutable.HashMap.empty[(Int, Set[Int]), Double]

    def classesOf(xs: Set[Int]): Set[Int] = xs.flatMap(cls)

    /** F(i, R): the product of leaf fan-outs along the greedy connected order from i through R. */
    def chain(i: Int, rest: Set[Int]): Double = chains.getOrElseUpdate((i, rest), {
      val bound = mutable.Set.empty[Int] ++= cls(i)
      val left = mutable.ArrayBuffer.empty[Int] ++= rest.toSeq.sorted
      var p = 1.0
      while (left.nonEmpty) {
        var best: Option[(Double, Int)] = None
        left.foreach { j =>
          val common = cls(j).filter(bound)
          if (common.nonEmpty) {
            val g = common.map(stats.fan(j, _)).min
            if (best.forall(g < _._1)) best = Some((g, j))
          }
        }
        val (g, j) = best.getOrElse((stats.stored(left.head), left.head)) // a cross product
        p = p * g
        bound ++= cls(j)
        left -= j
      }
      p
    })

    def delta(xs: Set[Int]): Double = {
      var s = 0.0
      xs.toSeq.sorted.foreach(i => s = s + stats.rate(i) * chain(i, xs - i))
      s
    }

    def size(xs: Set[Int]): Double = xs.toSeq.sorted.map(i => stats.stored(i) * chain(i, xs - i)).min

    def fanout(xs: Set[Int], c: Int): Double =
      xs.toSeq.sorted.filter(cls(_).contains(c)).map(j => stats.fan(j, c) * chain(j, xs - j)).min

    /** (child index, fan-out) in the order the delta of `children(k)` probes the others. */
    def probeOrder(children: Seq[Set[Int]], k: Int): Seq[(Int, Double)] = {
      val sets = children.map(classesOf)
      val bound = mutable.Set.empty[Int] ++= sets(k)
      val left = mutable.ArrayBuffer.empty[Int] ++= children.indices.filter(_ != k)
      val out = Seq.newBuilder[(Int, Double)]
      while (left.nonEmpty) {
        var best: Option[(Double, Int)] = None
        left.foreach { d =>
          val common = sets(d).filter(bound)
          if (common.nonEmpty) {
            val g = common.map(fanout(children(d), _)).min
            if (best.forall(g < _._1)) best = Some((g, d))
          }
        }
        val (g, d) = best.getOrElse((size(children(left.head)), left.head))
        out += ((d, g))
        bound ++= sets(d)
        left -= d
      }
      out.result()
    }

    /** The cost of one inner node whose children cover `children` (in plan order). */
    def nodeCost(children: Seq[Set[Int]], root: Boolean): Double = {
      var work = 0.0
      children.indices.foreach { k =>
        var acc = 0.0
        var p = 1.0
        probeOrder(children, k).foreach { case (_, g) => p = p * g; acc = acc + p }
        work = work + delta(children(k)) * acc
      }
      if (root) work
      else {
        val xs = children.reduce(_ ++ _)
        work + delta(xs) + MemoryWeight * size(xs)
      }
    }

    def planCost(plan: Join): Double = {
      def go(p: MultiJoinPlan, root: Boolean): Double = p match {
        case _: Input => 0.0
        case j: Join =>
          var s = 0.0
          j.children.foreach(c => s = s + go(c, root = false))
          nodeCost(j.children.map(_.inputs.toSet), root) + s
      }
      go(plan.canonical, root = true)
    }
  }
}
