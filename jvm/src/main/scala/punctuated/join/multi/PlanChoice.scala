package punctuated.join.multi

import scala.collection.mutable

import punctuated.join.multi.MultiJoinPlan.{Input, Join}

/**
 * The plan `spark.punctuated.join.plan=auto` runs: the cheapest ([[PlanCost]]) plan of a
 * group whose every state is purgeable (Li et al. 2006, §5.2). Only safe plans are built: by
 * Lemmas 1/2 every sub-plan of a safe plan is a safe plan of the sub-query on its inputs, so a
 * dynamic program over the subsets of inputs that are safe on their own (Theorems 2/4, as
 * `MultiJoinSafety` judges a group, [[PunctuationReach]]) builds them bottom-up, System-R style; an operator over
 * such subsets is kept only if each of its children reaches every other one in its punctuation
 * graph (Theorems 1/3; a child carries the schemes of every input under it, which propagate
 * since its sub-plan is safe). A safe subset is connected, so no plan has a cross product.
 * The port of the Python package's `punctuated.safety.plans.safe_plans` (same enumeration,
 * same cost, same ties: fewer intermediate states, then the plan's text).
 *
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v), schemes a "k", b "k; v", c "v", default statistics
 *   PlanChoice.choose(inputs, MultiJoinStatistics.default(inputs.map(_.classes)))   // (a ⋈ b ⋈ c), cost 6000
 * }}}
 *
 * When no plan is safe (the group runs in `warn` mode), or the group has more than
 * [[MaxInputs]] inputs, or the search gives up after [[MaxChecks]] operators: the MJoin.
 */
object PlanChoice {
  val MaxInputs = 10
  val MaxChecks = 50000
  /** Sub-plans kept per subset (the Python default). */
  val Keep = 3

  /** A safe plan (children ordered by first input) with its cost and number of intermediate states. */
  final case class Ranked(plan: Join, cost: Double, intermediates: Int)

  /**
   * The plan `auto` runs for a group whose inputs the punctuation graph sees as `inputs`
   * (`MultiJoinSafety.inputs(group)`).
   */
  def choose(inputs: Seq[PunctuationReach.Input], stats: MultiJoinStatistics): Join =
    ranked(inputs, stats).headOption.map(_.plan).getOrElse(MultiJoinPlan.mjoin(inputs.size))

  /**
   * The statistics a choice starts from: the recorded ones (the latest plan record's
   * `statistics`), if they are of inputs of these classes, else the defaults.
   */
  def statistics(recorded: Option[MultiJoinStatistics], inputs: Seq[PunctuationReach.Input]): MultiJoinStatistics =
    recorded
      .filter(s => s.size == inputs.size && inputs.indices.forall(i => s.classes(i) == inputs(i).classes))
      .getOrElse(MultiJoinStatistics.default(inputs.map(_.classes)))

  /** The `limit` cheapest safe plans, best first (empty when the search cannot run or nothing is safe). */
  def ranked(inputs: Seq[PunctuationReach.Input], stats: MultiJoinStatistics, limit: Int = 5): Seq[Ranked] = {
    val n = inputs.size
    require(stats.size == n, s"statistics of ${stats.size} inputs for $n inputs")
    if (n < 2 || n > MaxInputs) return Nil
    val model = new PlanCost.Model(stats)
    val full = (1 << n) - 1
    val bits: Int => Seq[Int] = m => (0 until n).filter(i => (m >> i & 1) == 1)
    val safe = Array.tabulate(full + 1) { m =>
      m != 0 && PunctuationReach.unpurgeable(bits(m).map(inputs)).isEmpty
    }
    val best = mutable.HashMap.empty[Int, Seq[(Double, Int, MultiJoinPlan)]]
    (0 until n).foreach(i => best(1 << i) = Seq((0.0, 0, Input(i))))
    var checks = 0
    var complete = true

    // the partitions of mask into safe blocks already planned, blocks ordered by their first input
    def parts(mask: Int): Iterator[List[Int]] = {
      val low = mask & -mask
      val rest = mask ^ low
      var sub = rest
      val out = mutable.ArrayBuffer.empty[List[Int]]
      var done = false
      while (!done) {
        val b = sub | low
        if (safe(b) && best.contains(b)) {
          if (b == mask) out += List(b) else parts(mask ^ b).foreach(p => out += b :: p)
        }
        if (sub == 0) done = true else sub = (sub - 1) & rest
      }
      out.iterator
    }

    val names: Int => String = inputs(_).name
    def key(e: (Double, Int, MultiJoinPlan)) = (e._1, e._2, e._3.text(names))
    val order: Ordering[(Double, Int, String)] =
      Ordering.Tuple3(Ordering.Double.TotalOrdering, Ordering.Int, Ordering.String)

    (1 to full).sortBy(Integer.bitCount).foreach { m =>
      if (!best.contains(m) && safe(m) && complete) {
        val found = mutable.ArrayBuffer.empty[(Double, Int, MultiJoinPlan)]
        val it = parts(m)
        while (complete && it.hasNext) {
          val blocks = it.next()
          if (blocks.size >= 2) {
            checks += 1
            if (checks > MaxChecks) complete = false
            else {
              val virtual = blocks.map { b =>
                val xs = bits(b).map(inputs)
                PunctuationReach.Input(xs.map(_.name).mkString(","), xs.flatMap(_.classes).toSet, xs.flatMap(_.schemes))
              }
              if (PunctuationReach.unpurgeable(virtual).isEmpty) {
                val local = model.nodeCost(blocks.map(b => bits(b).toSet), m == full)
                val inner = blocks.count(b => (b & (b - 1)) != 0)
                combos(blocks.map(best)).foreach { combo =>
                  var s = 0.0
                  combo.foreach(c => s = s + c._1)
                  found += ((local + s, inner + combo.map(_._2).sum, Join(combo.map(_._3))))
                }
              }
            }
          }
        }
        if (found.nonEmpty) {
          val sorted = found.sortBy(key)(order)
          best(m) = sorted.take(if (m != full) Keep else math.max(Keep, limit)).toSeq
        }
      }
    }
    if (!complete) return Nil
    best.getOrElse(full, Nil).take(limit).map { case (c, i, p) => Ranked(p.asInstanceOf[Join], c, i) }
  }

  private def combos[A](lists: Seq[Seq[A]]): Seq[Seq[A]] =
    lists.foldRight(Seq(Seq.empty[A])) { (xs, acc) => for (x <- xs; rest <- acc) yield x +: rest }
}
