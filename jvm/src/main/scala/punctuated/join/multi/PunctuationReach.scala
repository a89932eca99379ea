package punctuated.join.multi

/**
 * The punctuation graph of one join operator's inputs, as the safety check and the plan choice
 * see it (Li et al. 2006, §4.1.1–4.2: Definitions 7–9, Theorems 1–4): each input's attribute
 * classes and purging schemes (as class sets); an input's state is purgeable iff it reaches
 * every other input. Used by `punctuated.spark.rules.MultiJoinSafety` (a group as one
 * operator) and by [[PlanChoice]] (each node of a candidate plan, its children as inputs).
 *
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v), schemes a "k", b "k; v", c "v"
 *   unpurgeable(Seq(Input("a", Set(0), Seq(Set(0))), Input("b", Set(0, 1), Seq(Set(0), Set(1))),
 *     Input("c", Set(1), Seq(Set(1)))))    // Nil: every input reaches every other one
 * }}}
 */
object PunctuationReach {

  /**
   * One input as the punctuation graph sees it.
   *
   * @param name    its name, for messages
   * @param classes the attribute classes it has a column in
   * @param schemes its purging schemes (they have punctuations), each as the set of classes it binds
   */
  final case class Input(name: String, classes: Set[Int], schemes: Seq[Set[Int]])

  /**
   * The inputs `from` reaches in the generalized punctuation graph (Li et al. 2006, Def. 9),
   * `from` included: forward chaining over the classes bound so far.
   *
   * {{{
   *   reach(Seq(Input("a", Set(0), Nil), Input("b", Set(0, 1), Seq(Set(0))), Input("c", Set(1), Seq(Set(1)))), 0)
   *   // Set(0, 1, 2)
   * }}}
   */
  def reach(inputs: Seq[Input], from: Int): Set[Int] = {
    var reached = Set(from)
    var bound = inputs(from).classes
    var changed = true
    while (changed) {
      changed = false
      inputs.indices.filterNot(reached).foreach { j =>
        if (inputs(j).schemes.exists(s => s.nonEmpty && s.subsetOf(bound))) {
          reached += j
          bound ++= inputs(j).classes
          changed = true
        }
      }
    }
    reached
  }

  /** The inputs that do not reach every other input (Theorems 2/4: their state is never purged). */
  def unpurgeable(inputs: Seq[Input]): Seq[Int] = inputs.indices.filter(i => reach(inputs, i).size < inputs.size)
}
