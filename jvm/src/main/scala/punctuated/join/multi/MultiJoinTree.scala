package punctuated.join.multi

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, JoinedRow, UnsafeProjection, UnsafeRow}

import punctuated.input.InputSpec
import punctuated.join.multi.MultiJoinPlan.{Input, Join}

/**
 * A tree plan ([[MultiJoinPlan]]) as [[PunctuatedMultiJoinExec]] runs it: its *units* — the
 * inputs 0 .. n-1, then its intermediate nodes n, n+1, ... ([[MultiJoinPlan.intermediates]],
 * bottom-up) — and, per inner node, its children and the order in which a child's new rows
 * probe the others.
 *
 * An intermediate node is a *virtual input* ([[nodeSpec]]): its classes are its inputs'
 * classes, its key one column per class (of the first input having it), its rows its
 * inputs' rows concatenated in input order. Its state is a [[MultiJoinState]] like an
 * input's, in the store [[MultiJoinLayout.node]] names.
 *
 * {{{
 *   ((a ⋈ b) ⋈ c), a(k) b(k, v) c(v):  units 0 = a, 1 = b, 2 = c, 3 = {a, b} (classes k, v)
 *   a row of b:  at {a, b} probes a by k -> new combinations of {a, b}, stored in unit 3
 *                at the root probes c by v -> results
 *   a row of c:  at the root probes unit 3 by v -> results
 * }}}
 *
 * @param plan    the plan (canonical)
 * @param inputs  the inputs as planned
 * @param outputs each input's columns
 */
private[multi] final class MultiJoinTree(
    val plan: Join,
    inputs: IndexedSeq[MultiJoinInputSpec],
    outputs: Seq[Seq[Attribute]]) {

  val n: Int = inputs.size
  /** The intermediate nodes, bottom-up: node k is unit n + k. */
  val nodes: IndexedSeq[Join] = MultiJoinPlan.intermediates(plan).toIndexedSeq
  /** Is the plan the MJoin (no intermediate node)? */
  def isMJoin: Boolean = nodes.isEmpty

  /** The unit of a subplan (the root: -1; it keeps no state). */
  def unitOf(p: MultiJoinPlan): Int = p match {
    case Input(i) => i
    case j: Join => if (j == plan) -1 else n + nodes.indexOf(j)
  }

  /** The inputs a unit covers. */
  def inputsOf(u: Int): Seq[Int] = if (u < n) Seq(u) else nodes(u - n).inputs

  /** A unit's classes, increasing. */
  def classesOf(u: Int): Seq[Int] = inputsOf(u).flatMap(inputs(_).classes).distinct.sorted

  /** A unit's columns: its inputs' columns in input order. */
  def outputOf(u: Int): Seq[Attribute] = inputsOf(u).flatMap(outputs)

  /** Node `k` (unit n + k) as a virtual input: no schemes, key one column per class. */
  def nodeSpec(k: Int): MultiJoinInputSpec = specOf(inputsOf(n + k), n + k)

  /**
   * A node covering `covered` (increasing) as a virtual input numbered `unit`, whether or not
   * this plan has it (a node of another plan: [[MultiJoinMigration]]).
   */
  def specOf(covered: Seq[Int], unit: Int): MultiJoinInputSpec = {
    val classes = covered.flatMap(inputs(_).classes).distinct.sorted
    val keys = classes.map { c =>
      val i = covered.find(inputs(_).classes.contains(c)).get
      inputs(i).keys(inputs(i).classes.indexOf(c))
    }
    MultiJoinInputSpec(unit, InputSpec.of(None, keys, covered.flatMap(outputs)), keys, classes)
  }

  /** The columns of a node covering `covered` (its inputs' columns in input order). */
  def outputOfInputs(covered: Seq[Int]): Seq[Attribute] = covered.flatMap(outputs)

  /**
   * One inner node as the task runs it.
   *
   * @param unit     its unit (-1: the root)
   * @param children its children's units, in the plan's order
   * @param orders   per child position k, the order in which a new row of child k probes the
   *                 other children (positions): each next one shares a class with child k
   *                 or one before it (the smallest position first)
   */
  final class Inner(val unit: Int, val children: IndexedSeq[Int], val orders: IndexedSeq[IndexedSeq[Int]]) {
    /** The children's columns concatenated in child order (a combined row's layout). */
    val childOutput: Seq[Attribute] = children.flatMap(outputOf)
  }

  /** Inner nodes: the intermediate nodes (index k = unit n + k), then the root (last). */
  val inner: IndexedSeq[Inner] = (nodes :+ plan).map { j =>
    val children = j.children.map(unitOf).toIndexedSeq
    new Inner(unitOf(j), children, children.indices.map(k =>
      MultiJoinTree.probeOrder(children.map(classesOf), k).getOrElse(throw new IllegalStateException(
        s"plan ${plan.text(_.toString)}: the children of a node share no class"))))
  }

  private def sizeOf(x: Int): Int = if (inner(x).unit < 0) n else inputsOf(inner(x).unit).size

  /**
   * Input `i`'s ancestors bottom-up: (index in [[inner]], the position of the child holding
   * `i`), the root last.
   */
  val ancestors: IndexedSeq[Seq[(Int, Int)]] = (0 until n).map { i =>
    inner.indices.flatMap { x =>
      val k = inner(x).children.indexWhere(u => inputsOf(u).contains(i))
      if (k >= 0) Some(x -> k) else None
    }.sortBy(p => sizeOf(p._1))
  }
}

object MultiJoinTree {

  /**
   * The order in which a new row of child `k` probes the other children, given each child's
   * classes: each next child shares a class with `k` or a child before it (smallest position
   * first). None when the children are not connected by their classes (a cross product).
   */
  def probeOrder(classes: IndexedSeq[Seq[Int]], k: Int): Option[IndexedSeq[Int]] = {
    val bound = mutable.Set(classes(k): _*)
    val order = mutable.ArrayBuffer.empty[Int]
    var ok = true
    while (ok && order.size < classes.size - 1) {
      classes.indices.find(j => j != k && !order.contains(j) && classes(j).exists(bound)) match {
        case Some(next) => order += next; bound ++= classes(next)
        case None => ok = false
      }
    }
    if (ok) Some(order.toIndexedSeq) else None
  }

  /**
   * Why `plan` cannot run a group whose input i has the classes `classes(i)` (None: it can):
   * a node whose children share no class would be a cross product.
   */
  def problem(plan: Join, classes: IndexedSeq[Seq[Int]], names: Seq[String]): Option[String] = {
    def unitClasses(p: MultiJoinPlan): Seq[Int] = p.inputs.flatMap(classes).distinct
    def nodes(p: MultiJoinPlan): Seq[Join] = p match {
      case j: Join => j.children.flatMap(nodes) :+ j
      case _ => Nil
    }
    nodes(plan).find(j => probeOrder(j.children.map(unitClasses).toIndexedSeq, 0).isEmpty).map { j =>
      s"its node ${j.text(names)} joins inputs that share no join column (a cross product)"
    }
  }
}

/**
 * The delta of one new input row climbing a tree plan in one cell: at each ancestor N (the
 * row's subtree under child k), every new combination of child k probes N's other children's
 * states (look-ups by class value, in [[MultiJoinTree.Inner.orders]]); at an intermediate N
 * the resulting combinations are stored in N's state (if `store`) and climb on; at the root
 * they are results. A delta never probes its own subtree's state, so each combination is made
 * once: when the last of its rows arrives (the symmetric hash join's argument).
 *
 * @param tree    the plan
 * @param states  each unit's state (inputs, then intermediate nodes)
 * @param probes  per input j and class c, look-ups of j's state by c (counted here)
 * @param matches per input j and class c, the rows those look-ups found (counted here)
 * @param coordinates the cell's coordinates (each look-up counted once: [[MultiJoinObserved.once]])
 */
private[multi] final class MultiJoinTreeProbe(tree: MultiJoinTree, states: Int => MultiJoinState, numClasses: Int,
    probes: Array[Array[Long]], matches: Array[Array[Long]], coordinates: IndexedSeq[Int]) {
  private val joins = tree.inner.map(x => Array.fill(math.max(x.children.size - 1, 1))(new JoinedRow))
  /** Per intermediate node: its combined row (child order) -> its row (input order). */
  private val toNodeRow = tree.nodes.indices.map(k =>
    UnsafeProjection.create(tree.outputOf(tree.n + k), tree.inner(k).childOutput))

  private def combined(x: Int, rows: Array[InternalRow]): InternalRow = {
    val js = joins(x)
    var r: InternalRow = js(0)(rows(0), rows(1))
    var c = 2
    while (c < rows.length) { r = js(c - 1)(r, rows(c)); c += 1 }
    r
  }

  /**
   * Climbs input `i`'s new row (`value`, key `key`) to the root: `emit` gets each result
   * combination (root's children's rows in child order, valid during the call), `stored` each
   * combination stored in an intermediate node (its unit and key).
   */
  def climb(i: Int, value: UnsafeRow, key: UnsafeRow, store: Boolean,
      emit: InternalRow => Unit, stored: (Int, UnsafeRow) => Unit): Unit = {
    val leaf = states(i)
    val start = new Array[UnsafeRow](numClasses)
    leaf.classes.indices.foreach(q => start(leaf.classes(q)) = leaf.classValue(key, q))
    var deltas: Seq[(InternalRow, Array[UnsafeRow])] = Seq(value -> start)
    for ((x, k) <- tree.ancestors(i)) {
      val node = tree.inner(x)
      val next = mutable.ArrayBuffer.empty[(InternalRow, Array[UnsafeRow])]
      deltas.foreach { case (row, b) =>
        joinAt(x, k, row, b.clone(), { (r, binding) =>
          if (node.unit < 0) emit(r)
          else {
            val nodeRow = toNodeRow(x)(r).copy()
            if (store) {
              val st = states(node.unit)
              val nodeKey = st.keyOf(nodeRow).copy()
              st.append(nodeRow, nodeKey)
              stored(node.unit, nodeKey)
            }
            next += (nodeRow -> binding.clone())
          }
        })
      }
      deltas = next.toSeq
    }
  }

  /** Off while a migration completes a node: its look-ups are not the workload's. */
  private var observing = true

  /**
   * Called before every look-up of an intermediate node's state (its unit, the class and the
   * value it is looked up by): lazy completion of a node a plan migration left incomplete
   * ([[MultiJoinCompletion.ensure]]). Default: nothing (every node complete).
   */
  var beforeLookup: (Int, Int, UnsafeRow) => Unit = (_, _, _) => ()

  /** Runs `f` with the look-ups it makes not counted in the observed statistics. */
  def quietly[T](f: => T): T = {
    val was = observing
    observing = false
    try f finally observing = was
  }

  /**
   * Node `x`'s combinations (index in [[MultiJoinTree.inner]]) containing one of `rows`, rows
   * of its child at position `p` (with the child's state): each passed to `add` (the node's
   * row, a copy, and its key in the node's state). Look-ups not observed.
   */
  def combinations(x: Int, p: Int, rows: Iterator[UnsafeRow], add: (UnsafeRow, UnsafeRow) => Unit): Unit = {
    val child = states(tree.inner(x).children(p))
    val node = states(tree.inner(x).unit)
    quietly(rows.foreach { row =>
      val key = child.keyOf(row).copy()
      val b = new Array[UnsafeRow](numClasses)
      child.classes.indices.foreach(q => b(child.classes(q)) = child.classValue(key, q))
      joinAt(x, p, row, b, { (r, _) =>
        val nodeRow = toNodeRow(x)(r).copy()
        add(nodeRow, node.keyOf(nodeRow).copy())
      })
    })
  }

  /**
   * Completes intermediate node `x` (index in [[MultiJoinTree.inner]]) at a plan switch
   * ([[MultiJoinMigration]]): each of its first child's stored rows (`rows`, with the child's
   * state) joined with the other children's states, each combination passed to `add` (the
   * node's row, a copy, and its key in the node's state). One pass over the first child.
   */
  def fill(x: Int, rows: Iterator[UnsafeRow], add: (UnsafeRow, UnsafeRow) => Unit): Unit = combinations(x, 0, rows, add)

  /** Joins one row of child `k` of inner node `x` with the other children's states. */
  private def joinAt(x: Int, k: Int, row: InternalRow, binding: Array[UnsafeRow],
      done: (InternalRow, Array[UnsafeRow]) => Unit): Unit = {
    val node = tree.inner(x)
    val rows = new Array[InternalRow](node.children.size)
    rows(k) = row
    val order = node.orders(k)
    def extend(d: Int): Unit =
      if (d == order.size) done(combined(x, rows), binding)
      else {
        val pos = order(d)
        val st = states(node.children(pos))
        val by = st.classes.find(c => binding(c) != null).get
        val fresh = st.classes.indices.filter(q => binding(st.classes(q)) == null)
        if (node.children(pos) >= tree.n) beforeLookup(node.children(pos), by, binding(by))
        val candidates = st.rowsWith(by, binding(by))
        if (observing && node.children(pos) < tree.n) {
          if (MultiJoinObserved.once(coordinates, binding, Nil)) probes(node.children(pos))(by) += 1
          if (MultiJoinObserved.once(coordinates, binding, st.classes)) matches(node.children(pos))(by) += candidates.size
        }
        var u = 0
        while (u < candidates.size) {
          val partner = candidates(u)
          val pk = st.keyOf(partner).copy()
          val agrees = st.classes.indices.forall { q =>
            val c = st.classes(q)
            c == by || binding(c) == null || binding(c) == st.classValue(pk, q)
          }
          if (agrees) {
            fresh.foreach(q => binding(st.classes(q)) = st.classValue(pk, q))
            rows(pos) = partner
            extend(d + 1)
            fresh.foreach(q => binding(st.classes(q)) = null)
          }
          u += 1
        }
      }
    extend(0)
  }
}
