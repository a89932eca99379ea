package punctuated.join.multi

import org.apache.spark.sql.catalyst.expressions.Attribute

import punctuated.input.InputSpec

/**
 * One input of a multi-way join as planned: what the operator, its exchange and its
 * checkpoint record need to know of it.
 *
 * {{{
 *   a(k) JOIN b(k, v) ON a.k = b.k JOIN c(v) ON b.v = c.v       classes: 0 = {a.k, b.k}, 1 = {b.v, c.v}
 *   MultiJoinInputSpec(1, specOfB, keys = Seq(b.k, b.v), classes = Seq(0, 1))
 * }}}
 *
 * @param number  the input's number, 0 .. n-1 (the order [[MultiJoinGroup.inputs]] lists them)
 * @param spec    its declaration over `keys` (`InputSpec.of(declaration, keys, output)`): its
 *                schemes are [[punctuated.input.KeyScheme]]s over its class values
 * @param keys    its columns in the attribute classes, in increasing class number (its *key*)
 * @param classes the class number of each key column (increasing)
 */
final case class MultiJoinInputSpec(number: Int, spec: InputSpec, keys: Seq[Attribute], classes: Seq[Int]) {
  require(keys.size == classes.size && classes == classes.sorted && classes.distinct == classes,
    s"input $number: one key column per class, in class order: $classes")

  /**
   * The classes a punctuation of `scheme` pins to one value each (its constant positions): a
   * punctuation goes to the cells agreeing on them, and a held one is found by their values.
   */
  def boundClasses(scheme: punctuated.input.KeyScheme): Seq[Int] = scheme.constants.toSeq.map(classes)

  /**
   * The classes of `scheme`'s range attributes (`v<=`, `v>=`), in key order: none, one, or
   * several (a punctuation then closes a region of their values: [[punctuated.model.RangeRegion]]).
   */
  def rangeClasses(scheme: punctuated.input.KeyScheme): Seq[Int] = scheme.ranges.map { case (p, _) => classes(p) }

  /**
   * Every class `scheme` has an attribute in: its constants' and its range's. A punctuation
   * says something about a partial result only if the partial binds all of them (Li et al.
   * 2006, §4.2: a scheme's attributes, whatever their pattern).
   *
   * {{{
   *   b(k, v), classes (0, 1); scheme "k, v<="  ->  boundClasses [0], rangeClasses [1], schemeClasses [0, 1]
   * }}}
   */
  def schemeClasses(scheme: punctuated.input.KeyScheme): Seq[Int] = boundClasses(scheme) ++ rangeClasses(scheme)
}

object MultiJoinInputSpec {
  /**
   * How input l's stored keys are indexed for input j's range scheme s (id), by (j, s, l): a
   * scheme over l's key with s's ranges on the same classes (in the same order: both keys are
   * in class order) — and s's constants, when l has a column in each of their classes (then a
   * punctuation's slot is its constants: the same values in the same class order), else none
   * (one slot per cell). Only for l with a column in each of s's range classes: a scheme of
   * several ranges says nothing of a key lacking one of them.
   *
   * {{{
   *   a(k, t) ⋈ b(k, t) ⋈ c(t), b's scheme "k, t<=": a indexed by punctuated.input.KeyScheme([0], [1 <=]),
   *   c by punctuated.input.KeyScheme([], [0 <=])
   * }}}
   */
  def rangeLookups(inputs: Seq[MultiJoinInputSpec]): Map[(Int, Int, Int), punctuated.input.KeyScheme] = (for {
    j <- inputs
    s <- j.spec.keySchemes
    ranges = j.rangeClasses(s).zip(s.ranges.map(_._2)) if ranges.nonEmpty
    l <- inputs if l.number != j.number && ranges.forall { case (c, _) => l.classes.contains(c) }
  } yield {
    val constants = j.boundClasses(s)
    val own = if (constants.forall(l.classes.contains)) constants.map(l.classes.indexOf).toArray else Array.empty[Int]
    val onL = ranges.map { case (c, ge) => (l.classes.indexOf(c), ge) }
    (j.number, s.id, l.number) ->
      punctuated.input.KeyScheme(own, onL.toIndexedSeq)
  }).toMap

  /**
   * The schemes over input `number`'s key its distinct stored keys are indexed by (the
   * checkpoint's range index of that input: [[MultiJoinState]]).
   */
  def indexedFor(inputs: Seq[MultiJoinInputSpec], number: Int): Seq[punctuated.input.KeyScheme] =
    rangeLookups(inputs).collect { case ((_, _, l), k) if l == number => k }.toSeq.distinct
}
