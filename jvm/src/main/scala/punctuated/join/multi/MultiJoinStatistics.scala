package punctuated.join.multi

import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * What the choice of a multi-way join's plan knows about its inputs ([[PlanCost]],
 * [[PlanChoice]]): per input i (by number), `rate(i)` (data rows arriving per micro-batch)
 * and `stored(i)` (rows in state); per input j and attribute class c of j, `fanout(j)(c)`
 * (average stored rows of j per probed value of c). The keys of `fanout(j)` are j's classes.
 *
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v), classes 0 = k, 1 = v
 *   MultiJoinStatistics.default(Seq(Set(0), Set(0, 1), Set(1)))
 *   // rate 1000 each, stored 1000 each, fanout a {0: 1}, b {0: 1, 1: 1}, c {1: 1}
 *   JSON: {"rate":[1000.0,1000.0,1000.0],"stored":[...],"fanout":[{"0":1.0},{"0":1.0,"1":1.0},{"1":1.0}]}
 * }}}
 *
 * The JSON is the Python package's (`punctuated.safety.plan_cost.Statistics.to_dict`).
 */
final case class MultiJoinStatistics(rate: Seq[Double], stored: Seq[Double], fanout: Seq[Map[Int, Double]]) {
  require(rate.size == stored.size && rate.size == fanout.size,
    s"statistics of ${rate.size} rates, ${stored.size} stored sizes and ${fanout.size} fan-out maps")

  /** The number of inputs. */
  def size: Int = rate.size

  /** Input `i`'s attribute classes (the keys of its fan-outs). */
  def classes(i: Int): Set[Int] = fanout(i).keySet

  /** f_j(c), 1 when not known. */
  def fan(j: Int, c: Int): Double = fanout(j).getOrElse(c, MultiJoinStatistics.DefaultFanout)

  def toJValue: JValue = {
    def nums(s: Seq[Double]) = JArray(s.map(JDouble(_)).toList)
    JObject(
      "rate" -> nums(rate),
      "stored" -> nums(stored),
      "fanout" -> JArray(fanout.map(m => JObject(m.toSeq.sortBy(_._1).map { case (c, f) => c.toString -> (JDouble(f): JValue) }.toList)).toList))
  }

  def toJson: String = JsonMethods.compact(JsonMethods.render(toJValue))
}

object MultiJoinStatistics {
  val DefaultRate = 1000.0
  val DefaultStored = 1000.0
  val DefaultFanout = 1.0

  /** Every rate and stored size 1000, every fan-out 1 (key-like joins), for inputs of these classes. */
  def default(classes: Seq[Set[Int]]): MultiJoinStatistics = MultiJoinStatistics(
    Seq.fill(classes.size)(DefaultRate), Seq.fill(classes.size)(DefaultStored),
    classes.map(cs => cs.toSeq.sorted.map(_ -> DefaultFanout).toMap))

  /** The defaults for `n` inputs of the given classes (`classes.size == n`). */
  def default(n: Int, classes: Seq[Set[Int]]): MultiJoinStatistics = {
    require(classes.size == n, s"$n inputs, ${classes.size} class sets")
    default(classes)
  }

  def fromJson(json: String): MultiJoinStatistics = fromJValue(JsonMethods.parse(json))

  def fromJValue(v: JValue): MultiJoinStatistics = {
    def num(j: JValue): Double = j match {
      case JDouble(d) => d
      case JInt(i) => i.toDouble
      case JDecimal(d) => d.toDouble
      case JLong(l) => l.toDouble
      case other => throw new IllegalArgumentException(s"expected a number, got $other")
    }
    def arr(j: JValue): List[JValue] = j match {
      case JArray(xs) => xs
      case other => throw new IllegalArgumentException(s"expected an array, got $other")
    }
    MultiJoinStatistics(
      arr(v \ "rate").map(num),
      arr(v \ "stored").map(num),
      arr(v \ "fanout").map {
        case JObject(fields) => fields.map { case (c, f) => c.toInt -> num(f) }.toMap
        case other => throw new IllegalArgumentException(s"expected an object of fan-outs, got $other")
      })
  }
}
