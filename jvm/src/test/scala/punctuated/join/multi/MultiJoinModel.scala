package punctuated.join.multi

import scala.collection.mutable
import scala.util.Random

/**
 * A row of one input of [[MultiJoinPropertySuite]]'s queries, as its `MemoryStream` carries it:
 * the case column `c`, up to three further class columns, a value (unique over the run) and
 * the marker. An input selects only the class columns it has.
 */
case class MJRow(c: Option[Int], x1: Option[Int], x2: Option[Int], x3: Option[Int], v: Option[Int], p: Boolean)

/**
 * The test oracle of the multi-way join, written from the rules alone (Li et al. 2006, §3.2
 * chained purge, §4.2 generalized punctuation graph) and independent of `punctuated.join.multi`.
 *
 * Classes are numbered by the test: class 0 is the case column `c`, which every input has and
 * every scheme binds, so cases never interact; classes 1..m are further join columns.
 *
 * {{{
 *   val q = MultiJoinModel.Query(Shape("chain", IndexedSeq(Set(0, 1), Set(0, 1, 2), Set(0, 2))), ...)
 *   val model = new MultiJoinModel(q)
 *   model.endBatch(elements)        // one micro-batch
 *   model.storedRows                // what the operator must store now (maximal purge)
 * }}}
 */
object MultiJoinModel {
  /** Values of a further class: 0 until Domain. */
  val Domain = 3

  /**
   * A query's shape: the classes each input has columns in (each set contains 0, the case).
   */
  case class Shape(name: String, classesOf: IndexedSeq[Set[Int]]) {
    def inputs: Int = classesOf.size
    def further: Seq[Int] = classesOf.flatten.distinct.filter(_ != 0).sorted
  }

  /**
   * A range attribute of a scheme: its class, and its direction (`x<=`, or `x>=` when `atLeast`).
   */
  case class RangeOf(cls: Int, atLeast: Boolean) {
    /** Does a punctuation with this bound cover the value? */
    def covers(value: Int, bound: Int): Boolean = if (atLeast) value >= bound else value <= bound
    /** The bound that covers every value of the domain. */
    def whole: Int = if (atLeast) 0 else Domain - 1
    def operator: String = if (atLeast) ">=" else "<="
  }

  /**
   * A query: its shape, each input's schemes as the classes they bind (besides the case
   * scheme `{0}` every input also has, sent only to close a whole case), optional unique
   * key (classes, at least two), and each input's range attributes by scheme (Tucker et al.
   * 2003, §3, range patterns: a scheme's classes bound by ranges, `x<=` or `x>=`; with several,
   * a punctuation is their conjunction).
   */
  case class Query(shape: Shape, schemes: IndexedSeq[Seq[Set[Int]]], unique: IndexedSeq[Option[Set[Int]]],
      ranges: IndexedSeq[Map[Set[Int], Seq[RangeOf]]] = IndexedSeq.empty) {
    def rangesOf(i: Int, scheme: Set[Int]): Seq[RangeOf] = ranges.lift(i).flatMap(_.get(scheme)).getOrElse(Nil)
    /** The operator of class `k` in scheme `s` of input `i` as written: `<=`, `>=` or "" (a constant). */
    def operatorOf(i: Int, s: Set[Int], k: Int): String = rangesOf(i, s).find(_.cls == k).map(_.operator).getOrElse("")
    override def toString: String = s"${shape.name}: " + shape.classesOf.indices.map { i =>
      s"in$i(${shape.classesOf(i).toSeq.sorted.mkString(",")}) schemes " +
        schemes(i).map(s => s.toSeq.sorted.map(k => k.toString + Some(operatorOf(i, s, k)).filter(_.nonEmpty)
          .getOrElse("")).mkString("{", ",", "}")).mkString(" ") +
        unique(i).map(u => s" unique ${u.toSeq.sorted.mkString("{", ",", "}")}").getOrElse("")
    }.mkString("; ")
  }

  /** Li et al. 2006, Theorem 2/4: every input reaches every other in the generalized punctuation graph. */
  def safe(shape: Shape, schemes: IndexedSeq[Seq[Set[Int]]]): Boolean =
    shape.classesOf.indices.forall(i => reach(shape, schemes, i).size == shape.inputs)

  /** The inputs reached from `i`: j is reached when one of its schemes binds only reached classes. */
  def reach(shape: Shape, schemes: IndexedSeq[Seq[Set[Int]]], i: Int): Set[Int] = {
    var visited = Set(i)
    var bound = shape.classesOf(i)
    var changed = true
    while (changed) {
      changed = false
      for (j <- shape.classesOf.indices if !visited(j) && schemes(j).exists(_.subsetOf(bound))) {
        visited += j; bound ++= shape.classesOf(j); changed = true
      }
    }
    visited
  }

  /** Random schemes over `shape` (one to three per input, of one or two further classes each). */
  def randomQuery(shape: Shape, rng: Random): Query = {
    val schemes = shape.classesOf.map { cls =>
      val further = cls.filter(_ != 0).toSeq.sorted
      (0 until 1 + rng.nextInt(math.min(3, further.size))).map { _ =>
        val size = if (further.size > 1 && rng.nextInt(3) == 0) 2 else 1
        rng.shuffle(further).take(size).toSet + 0
      }.distinct
    }
    val unique = shape.classesOf.indices.map { i =>
      val further = shape.classesOf(i).filter(_ != 0).toSeq.sorted
      if (rng.nextInt(4) != 0) None
      else Some(rng.shuffle(further).take(1 + rng.nextInt(further.size)).toSet + 0)
        .filterNot(u => schemes(i).contains(u))
    }
    Query(shape, schemes, unique)
  }

  /**
   * The same with range attributes: each scheme, with probability 1/2, has one of its further
   * classes as a range (`<=` or `>=`, at random); with `several`, a scheme of two further
   * classes has both as ranges with probability 1/3 (a punctuation closes a staircase region).
   */
  def randomRangeQuery(shape: Shape, rng: Random, several: Boolean = false): Query = {
    val q = randomQuery(shape, rng)
    q.copy(ranges = q.schemes.map(_.flatMap { s =>
      val further = s.filter(_ != 0).toSeq.sorted
      if (several && further.size >= 2 && rng.nextInt(3) == 0)
        Some(s -> further.map(RangeOf(_, rng.nextBoolean())))
      else if (rng.nextBoolean()) Some(s -> Seq(RangeOf(further(rng.nextInt(further.size)), rng.nextBoolean())))
      else None
    }.toMap))
  }

  /** A random query over `shape` that Theorems 2/4 call safe (by its schemes, not the case scheme). */
  def safeQuery(shape: Shape, rng: Random, ranges: Boolean = false, several: Boolean = false): Option[Query] =
    Iterator.continually(if (ranges) randomRangeQuery(shape, rng, several) else randomQuery(shape, rng))
      .take(if (several) 5000 else 200)
      .find(q => safe(shape, q.schemes) && (!several || q.ranges.exists(_.values.exists(_.size > 1))))

  /** A random shape: n inputs, m further classes, each in two or more inputs, every input in one. */
  def randomShape(name: String, n: Int, m: Int, rng: Random): Shape = {
    val members = (1 to m).map(k => k -> rng.shuffle((0 until n).toList).take(2 + rng.nextInt(n - 1)).toSet)
    val classesOf = (0 until n).map(i => members.collect { case (k, in) if in(i) => k }.toSet + 0)
    if (classesOf.forall(_.size > 1)) Shape(name, classesOf) else randomShape(name, n, m, rng)
  }

  sealed trait Elem { def input: Int; def row: MJRow }

  /** A data row: its class values (class -> value, the case at class 0). */
  case class Data(input: Int, values: Map[Int, Int], v: Int, late: Boolean) extends Elem {
    def row: MJRow = MJRow(values.get(0), values.get(1), values.get(2), values.get(3), Some(v), p = false)
  }

  /**
   * A punctuation: "no more rows of `input` with these values on these classes" — on its
   * `ranges` classes, values the ranges' bounds cover (all of them: a conjunction).
   */
  case class Punct(input: Int, values: Map[Int, Int], ranges: Seq[RangeOf] = Nil) extends Elem {
    def classes: Set[Int] = values.keySet
    def covers(row: Map[Int, Int]): Boolean = values.forall { case (k, x) =>
      ranges.find(_.cls == k) match {
        case Some(r) => row.get(k).exists(r.covers(_, x))
        case None => row.get(k).contains(x)
      }
    }
    /** The same scheme (classes and ranges) and constants. */
    def sameSlot(p: Punct): Boolean = p.input == input && p.classes == classes && p.ranges == ranges &&
      values.forall { case (k, x) => ranges.exists(_.cls == k) || p.values(k) == x }
    def covers(p: Punct): Boolean = covers(p.values)
    def row: MJRow = MJRow(values.get(0), values.get(1), values.get(2), values.get(3), None, p = true)
  }
}

/**
 * The rules of the multi-way join, applied literally after every micro-batch: late rows,
 * punctuations taking effect at the end of the batch, chained purge to a fixpoint, the release
 * of held punctuations (retention 0). Counts are summed over all cases, as the operator's
 * metrics are summed over partitions (every scheme binds the case, whose class takes all the
 * hypercube's shares: nothing is replicated).
 */
class MultiJoinModel(query: MultiJoinModel.Query) {
  import MultiJoinModel._

  private val shape = query.shape
  private val n = shape.inputs
  private val data = IndexedSeq.fill(n)(mutable.ArrayBuffer.empty[Data])
  /** Stored rows per input and case. */
  private val stored = IndexedSeq.fill(n)(mutable.Map.empty[Int, mutable.LinkedHashSet[Data]])
  /** Every punctuation that took effect (held or remembered), per input and case. */
  private val effective = IndexedSeq.fill(n)(mutable.Map.empty[Int, mutable.LinkedHashSet[Punct]])
  private val held = IndexedSeq.fill(n)(mutable.LinkedHashSet.empty[Punct])
  private val usedUnique = IndexedSeq.fill(n)(mutable.Set.empty[Map[Int, Int]])
  /** Cases an input closed whole (the case scheme). */
  private val caseClosed = IndexedSeq.fill(n)(mutable.Set.empty[Int])
  private var late = 0L
  private var purged = 0L
  private var released = 0L
  private var nextV = 0

  def lateInBatch: Long = late
  /** Rows the last batch purged and punctuations it released (to show what a run exercises). */
  def purgedInBatch: Long = purged
  def releasedInBatch: Long = released
  def storedRows: Long = stored.map(_.values.map(_.size.toLong).sum).sum

  private def storedOf(i: Int, c: Int) = stored(i).getOrElseUpdate(c, mutable.LinkedHashSet.empty)
  private def effectiveOf(i: Int, c: Int) = effective(i).getOrElseUpdate(c, mutable.LinkedHashSet.empty)
  def heldPunctuations: Long = held.map(_.size.toLong).sum

  private def closedBefore(i: Int, values: Map[Int, Int]) = effectiveOf(i, values(0)).exists(_.covers(values))

  /**
   * One batch of case `c`: grammatical rows and punctuations of every input, plus (if
   * `lateRows`) rows their own earlier punctuations cover. Never a punctuation an earlier one
   * of its input covers, never a row of a used unique key.
   */
  def generate(c: Int, batch: Int, lateRows: Boolean, rng: Random): Seq[Elem] = (0 until n).flatMap { i =>
    val out = mutable.ArrayBuffer.empty[Elem]
    val sent = mutable.ArrayBuffer.empty[Punct]
    def newPunct(p: Punct) = !closedBefore(i, p.values) && !sent.exists(_.covers(p))
    if (caseClosed(i)(c)) {
      if (lateRows && rng.nextInt(5) == 0) out += randomData(i, c, rng).copy(late = true)
    } else {
      for (_ <- 0 until rng.nextInt(4)) {
        if (rng.nextInt(10) < 3) {
          val s = query.schemes(i)(rng.nextInt(query.schemes(i).size))
          val p = Punct(i, s.map(k => k -> (if (k == 0) c else rng.nextInt(Domain))).toMap, query.rangesOf(i, s))
          if (newPunct(p)) { sent += p; out += p }
        } else {
          val d = randomData(i, c, rng)
          val key = query.unique(i).map(u => d.values.filter(kv => u(kv._1)))
          if (key.exists(usedUnique(i))) ()   // a used unique key: never sent (not even late)
          else if (closedBefore(i, d.values)) { if (lateRows && rng.nextBoolean()) out += d.copy(late = true) }
          else if (!sent.exists(_.covers(d.values))) {
            key.foreach(usedUnique(i) += _)
            out += d
          }
        }
      }
      if (batch >= 1 && rng.nextInt(20) == 0) { out += Punct(i, Map(0 -> c)); caseClosed(i) += c }
    }
    out.toSeq
  }

  private def randomData(i: Int, c: Int, rng: Random): Data = {
    nextV += 1
    Data(i, shape.classesOf(i).toSeq.sorted.map(k => k -> (if (k == 0) c else rng.nextInt(Domain))).toMap,
      nextV, late = false)
  }

  /** Every value combination of every scheme of every input (not already closed) of case `c`. */
  def punctuateAll(c: Int): Seq[Elem] = (0 until n).filterNot(caseClosed(_)(c)).flatMap { i =>
    val sent = mutable.ArrayBuffer.empty[Punct]
    for (s <- query.schemes(i).sortBy(_.size)) {
      val ranges = query.rangesOf(i, s)
      val further = s.filter(_ != 0).toSeq.sorted
      val combos = further.foldLeft(Seq(Map(0 -> c))) { (acc, k) =>
        ranges.find(_.cls == k) match {
          case Some(r) => acc.map(_ + (k -> r.whole))
          case None => for (m <- acc; x <- 0 until Domain) yield m + (k -> x)
        }
      }
      for (vs <- combos; p = Punct(i, vs, ranges) if !closedBefore(i, vs) && !sent.exists(_.covers(p))) sent += p
    }
    sent.toSeq
  }

  /** The case punctuation of every input that has not closed case `c` (of each with probability 1/2 with `rng`). */
  def closeCase(c: Int, rng: Option[Random]): Seq[Elem] =
    (0 until n).filterNot(caseClosed(_)(c)).filter(_ => rng.forall(_.nextBoolean()))
      .map { i => caseClosed(i) += c; Punct(i, Map(0 -> c)) }

  /** Applies one micro-batch (all cases) as the rules say. */
  def endBatch(elems: Seq[Elem]): Unit = {
    late = 0; purged = 0; released = 0
    val fresh = mutable.ArrayBuffer.empty[Punct]
    elems.foreach {
      case d: Data =>
        assert(d.late == closedBefore(d.input, d.values), s"generator: $d")
        if (d.late) late += 1
        else {
          data(d.input) += d; storedOf(d.input, d.values(0)) += d
          query.unique(d.input).foreach(u => fresh += Punct(d.input, d.values.filter(kv => u(kv._1))))
        }
      case p: Punct => fresh += p
    }
    // punctuations take effect at the end of the batch; one an earlier one of its scheme and
    // constants covers says nothing new; a range punctuation replaces the held one it covers
    // (one held per scheme and constants, the greatest bound)
    for (p <- fresh if !effectiveOf(p.input, p.values(0)).exists(q => q.sameSlot(p) && q.covers(p.values))) {
      effectiveOf(p.input, p.values(0)) += p
      held(p.input).filter(_.sameSlot(p)).foreach(held(p.input) -= _)
      held(p.input) += p
    }
    purge()
    release()
  }

  /** Chained purge to a fixpoint: removing a row can only make other rows purgeable. */
  private def purge(): Unit = {
    var changed = true
    while (changed) {
      changed = false
      for (i <- 0 until n; rows <- stored(i).values; t <- rows.toSeq if purgeable(i, t)) {
        rows -= t; purged += 1; changed = true
      }
    }
  }

  /** design.md's closure: does it reach every input from stored row `t` of input `i`? */
  def purgeable(i: Int, t: Data): Boolean = closure(Set(i), t.values)

  /**
   * The closure started with the inputs `covered` visited and `key` (class values, the case
   * at class 0) as the only partial: does it reach every input? With one input, the rule for
   * its stored rows; with a tree plan's node, for the node's combinations.
   */
  def closure(covered: Set[Int], key: Map[Int, Int]): Boolean = {
    var visited = covered
    val c = key(0)
    var partials = Seq(key)
    var changed = true
    while (changed) {
      changed = false
      for (j <- 0 until n if !visited(j)) {
        val closed = partials.forall(p => effectiveOf(j, c).exists(q => q.classes.subsetOf(p.keySet) && q.covers(p)))
        if (closed) {
          visited += j
          changed = true
          partials = for (p <- partials; u <- storedOf(j, c).toSeq
            if u.values.forall { case (k, x) => p.get(k).forall(_ == x) }) yield p ++ u.values
        }
      }
    }
    visited.size == n
  }

  /**
   * Releases held punctuations: p of input j binding classes B with values x goes when, for
   * some b in B, every other input with a column in b has closed x_b by a scheme binding b
   * alone and stores no row with b = x_b.
   */
  private def release(): Unit = for (j <- 0 until n; p <- held(j).toSeq) {
    val free = (p.classes -- p.ranges.map(_.cls)).exists { b =>
      (0 until n).filter(k => k != j && shape.classesOf(k)(b)).forall { k =>
        val c = p.values(0)
        effectiveOf(k, c).exists(q => q.ranges.isEmpty && q.values == Map(b -> p.values(b))) &&
          !storedOf(k, c).exists(_.values.get(b).contains(p.values(b)))
      }
    }
    if (free) { held(j) -= p; released += 1 }
  }

  /**
   * The combinations an intermediate node covering `inputs` keeps: every combination of the
   * stored rows of its inputs (agreeing on every class) that the closure started with the
   * node's inputs visited cannot purge. Also asserts that every combination of non-late rows
   * containing a row that is no longer stored is purgeable by that closure (so no node keeps
   * a row its input forgot).
   */
  def nodeRows(inputs: Seq[Int]): Long = {
    val byCase = inputs.map(i => data(i).groupBy(_.values(0)))
    byCase.head.keys.toSeq.map { c =>
      inputs.indices.foldLeft(Seq((Map.empty[Int, Int], true))) { case (acc, x) =>
        val i = inputs(x)
        for ((b, allStored) <- acc; d <- byCase(x).getOrElse(c, Nil)
          if d.values.forall { case (k, v) => b.get(k).forall(_ == v) })
          yield (b ++ d.values, allStored && storedOf(i, c).contains(d))
      }.count { case (key, allStored) =>
        val purgeable = closure(inputs.toSet, key)
        assert(allStored || purgeable, s"a combination of node ${inputs.mkString("{", ", ", "}")} holds a row " +
          s"its input purged, yet its closure keeps it: $key")
        allStored && !purgeable
      }.toLong
    }.sum
  }

  /** The batch inner join of all non-late rows so far: (c, v of input 0, ..., v of input n-1). */
  def output: Seq[Seq[Int]] = {
    val byCase = (0 until n).map(i => data(i).groupBy(_.values(0)))
    byCase(0).keys.toSeq.flatMap { c =>
      (0 until n).foldLeft(Seq((Map.empty[Int, Int], Seq.empty[Int]))) { case (acc, i) =>
        for ((b, vs) <- acc; d <- byCase(i).getOrElse(c, Nil)
          if d.values.forall { case (k, x) => b.get(k).forall(_ == x) }) yield (b ++ d.values, vs :+ d.v)
      }.map { case (_, vs) => c +: vs }
    }
  }
}
