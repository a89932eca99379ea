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

  /** The classes a scheme of this input binds (its constant positions). */
  def boundClasses(scheme: punctuated.input.KeyScheme): Seq[Int] = scheme.constants.toSeq.map(classes)
}
