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

  /** The class of `scheme`'s range attribute (`v<=`, `v>=`), if it has one. */
  def rangeClass(scheme: punctuated.input.KeyScheme): Option[Int] = scheme.range.map(classes)

  /**
   * Every class `scheme` has an attribute in: its constants' and its range's. A punctuation
   * says something about a partial result only if the partial binds all of them (Li et al.
   * 2006, §4.2: a scheme's attributes, whatever their pattern).
   *
   * {{{
   *   b(k, v), classes (0, 1); scheme "k, v<="  ->  boundClasses [0], rangeClass Some(1), schemeClasses [0, 1]
   * }}}
   */
  def schemeClasses(scheme: punctuated.input.KeyScheme): Seq[Int] = boundClasses(scheme) ++ rangeClass(scheme)
}

object MultiJoinInputSpec {
  /**
   * How input l's stored keys are indexed for input j's range scheme s (id), by (j, s, l): a
   * scheme over l's key with s's range on the same class — and s's constants, when l has a
   * column in each of their classes (then a punctuation's slot is its constants: the same
   * values in the same class order), else none (one slot per cell). Only for l with a column
   * in s's range class.
   *
   * {{{
   *   a(k, t) ⋈ b(k, t) ⋈ c(t), b's scheme "k, t<=": a indexed by punctuated.input.KeyScheme([0], Some(1)),
   *   c by punctuated.input.KeyScheme([], Some(0))
   * }}}
   */
  def rangeLookups(inputs: Seq[MultiJoinInputSpec]): Map[(Int, Int, Int), punctuated.input.KeyScheme] = (for {
    j <- inputs
    s <- j.spec.keySchemes
    c <- j.rangeClass(s).toSeq
    l <- inputs if l.number != j.number && l.classes.contains(c)
  } yield {
    val constants = j.boundClasses(s)
    val own = if (constants.forall(l.classes.contains)) constants.map(l.classes.indexOf).toArray else Array.empty[Int]
    (j.number, s.id, l.number) -> punctuated.input.KeyScheme(own, Some(l.classes.indexOf(c)), s.atLeast)
  }).toMap

  /**
   * The schemes over input `number`'s key its distinct stored keys are indexed by (the
   * checkpoint's range index of that input: [[MultiJoinState]]).
   */
  def indexedFor(inputs: Seq[MultiJoinInputSpec], number: Int): Seq[punctuated.input.KeyScheme] =
    rangeLookups(inputs).collect { case ((_, _, l), k) if l == number => k }.toSeq.distinct
}
