package punctuated.join.multi

import org.json4s._

/**
 * The plan of a multi-way join (Li et al. 2006, §2.2 and §5.2): a tree whose leaves are the
 * group's inputs (by number, 0 .. n-1) and whose inner nodes join their children. A node
 * with two children is a binary join, one with three or more an MJoin; every inner node but
 * the root keeps its result as *intermediate state* (named by the inputs it covers), the
 * root emits its result. Child order carries no meaning (the joins are symmetric):
 * [[canonical]] sorts children by their smallest input.
 *
 * {{{
 *   a, b, c = inputs 0, 1, 2
 *   (a ⋈ b ⋈ c)         Join(Input(0), Input(1), Input(2))            mjoin: no intermediate state
 *   ((a ⋈ b) ⋈ c)       Join(Join(Input(0), Input(1)), Input(2))      left-deep: state of {a, b}
 *   ((a ⋈ b) ⋈ c ⋈ d)   Join(Join(0, 1), Input(2), Input(3))          bushy: an MJoin over {a, b}, c, d
 * }}}
 *
 * The same notation as the Python package's `punctuated.safety.tree.plan_to_str`; JSON is
 * nested arrays of input numbers (`[[0, 1], 2]`).
 */
sealed trait MultiJoinPlan {
  /** The inputs this (sub)plan covers, increasing. */
  def inputs: Seq[Int]

  /** `((a ⋈ b) ⋈ c)` with the inputs' names. */
  def text(names: Int => String): String

  /** The plan with children in a canonical order (by smallest input), recursively. */
  def canonical: MultiJoinPlan

  def toJValue: JValue
}

object MultiJoinPlan {

  /** A leaf: input `number` of the group. */
  final case class Input(number: Int) extends MultiJoinPlan {
    require(number >= 0, s"input $number")
    override def inputs: Seq[Int] = Seq(number)
    override def text(names: Int => String): String = names(number)
    override def canonical: MultiJoinPlan = this
    override def toJValue: JValue = JInt(number)
  }

  /** An inner node joining its children (two or more, covering disjoint inputs). */
  final case class Join(children: Seq[MultiJoinPlan]) extends MultiJoinPlan {
    require(children.size >= 2, s"a join needs two or more children: $children")
    override val inputs: Seq[Int] = children.flatMap(_.inputs).sorted
    require(inputs.distinct.size == inputs.size, s"an input appears twice in $children")
    override def text(names: Int => String): String = children.map(_.text(names)).mkString("(", " ⋈ ", ")")
    override def canonical: MultiJoinPlan = Join(children.map(_.canonical).sortBy(_.inputs.head))
    override def toJValue: JValue = JArray(children.map(_.toJValue).toList)

    /** Is this an MJoin of leaves only (no intermediate state)? */
    def isMJoin: Boolean = children.forall(_.isInstanceOf[Input])
  }

  /** The MJoin of inputs 0 .. n-1: one operator, no intermediate state. */
  def mjoin(n: Int): Join = Join((0 until n).map(Input))

  /** The left-deep tree of binary joins taking the inputs in `order`. */
  def leftDeep(order: Seq[Int]): Join = {
    require(order.size >= 2, s"a left-deep tree needs two or more inputs: $order")
    order.drop(2).foldLeft(Join(Seq(Input(order(0)), Input(order(1))))) { (acc, i) => Join(Seq(acc, Input(i))) }
  }

  /** The plan's kind for records and metrics: `mjoin` (no intermediate state) or `tree`. */
  def kind(plan: Join): String = if (plan.isMJoin) "mjoin" else "tree"

  /** Every inner node of `plan` but the root: the nodes that keep intermediate state, bottom-up. */
  def intermediates(plan: Join): Seq[Join] = {
    def below(p: MultiJoinPlan): Seq[Join] = p match {
      case j: Join => j.children.flatMap(below) :+ j
      case _: Input => Nil
    }
    plan.children.flatMap(below)
  }

  /**
   * Parses `((a ⋈ b) ⋈ c)` (also `((a, b), c)` or `((a JOIN b) JOIN c)`) over the inputs'
   * `names` (case-insensitive). The outer parentheses may be left out: `(a ⋈ b) ⋈ c`.
   * Fails with a message naming the text and the inputs when it is not a plan of exactly
   * these inputs.
   */
  def parse(text: String, names: Seq[String]): Join = {
    def fail(why: String) = throw new IllegalArgumentException(
      s"'$text' is not a join plan of the inputs ${names.mkString(", ")}: $why " +
        s"(write a tree of these names, e.g. ${leftDeep(names.indices).text(names)})")
    val tokens = "\\(|\\)|,|⋈|[^\\s(),⋈]+".r.findAllIn(text).toList
      .filterNot(t => t == "," || t == "⋈" || t.equalsIgnoreCase("join"))
    var pos = 0
    def node(): MultiJoinPlan = {
      if (pos >= tokens.size) fail("it ends too early")
      val t = tokens(pos); pos += 1
      if (t == "(") {
        val children = scala.collection.mutable.ArrayBuffer.empty[MultiJoinPlan]
        while (pos < tokens.size && tokens(pos) != ")") children += node()
        if (pos >= tokens.size) fail("a parenthesis is not closed")
        pos += 1
        if (children.size == 1) children.head
        else if (children.isEmpty) fail("'()' joins nothing")
        else Join(children.toSeq)
      } else if (t == ")") fail("a parenthesis closes nothing")
      else {
        val i = names.indexWhere(_.equalsIgnoreCase(t))
        if (i < 0) fail(s"'$t' is not one of its inputs")
        Input(i)
      }
    }
    val top = scala.collection.mutable.ArrayBuffer.empty[MultiJoinPlan]
    try {
      while (pos < tokens.size) top += node()
    } catch {
      case e: IllegalArgumentException if !e.getMessage.startsWith(s"'$text'") => fail(e.getMessage)
    }
    val plan = if (top.size == 1) top.head else Join(top.toSeq)
    plan match {
      case j: Join if j.inputs == names.indices => j
      case p => fail(s"it covers ${p.inputs.map(names).mkString(", ")}")
    }
  }

  /** The plan of a JSON value of [[MultiJoinPlan.toJValue]] (nested arrays of input numbers). */
  def fromJValue(v: JValue): MultiJoinPlan = v match {
    case JInt(i) => Input(i.toInt)
    case JArray(xs) => Join(xs.map(fromJValue))
    case other => throw new IllegalArgumentException(s"not a join plan: $other")
  }
}
