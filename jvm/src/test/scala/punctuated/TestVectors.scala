package punctuated

import scala.io.Source

import org.json4s._
import org.json4s.jackson.JsonMethods.parse

import punctuated.model._

/**
 * Reads the shared JSON test vectors of `testdata/` (on the test classpath), which pytest
 * reads too, and converts their values and patterns to the Scala model.
 */
object TestVectors {
  implicit val formats: Formats = DefaultFormats

  def load(name: String): JValue = {
    val in = getClass.getResourceAsStream(s"/$name")
    require(in != null, s"test vectors $name not on the test classpath (testdata/)")
    try parse(Source.fromInputStream(in, "UTF-8").mkString) finally in.close()
  }

  /** JSON numbers compare numerically (as BigDecimal), strings by code point. */
  implicit val valueOrdering: Ordering[Any] = new Ordering[Any] {
    override def compare(x: Any, y: Any): Int = (x, y) match {
      case (a: BigDecimal, b: BigDecimal) => a.compare(b)
      case (a: String, b: String) => a.compareTo(b)
      case _ => throw new IllegalArgumentException(s"incomparable test values $x and $y")
    }
  }

  def value(v: JValue): Any = v match {
    case JNull | JNothing => null
    case JInt(i) => BigDecimal(i)
    case JLong(l) => BigDecimal(l)
    case JDouble(d) => BigDecimal(d)
    case JDecimal(d) => d
    case JString(s) => s
    case JBool(b) => b
    case other => throw new IllegalArgumentException(s"unexpected test value $other")
  }

  def pattern(p: JValue): Pattern = (p \ "kind").extract[String] match {
    case "wildcard" => Wildcard
    case "empty" => Empty
    case "constant" => Constant(value(p \ "value"))
    case "list" => ValueList((p \ "values").children.map(value))
    case "range" =>
      def bound(v: String, inc: String) =
        Option(value(p \ v)).map(Bound(_, (p \ inc).extract[Boolean]))
      Range(bound("lo", "loInclusive"), bound("hi", "hiInclusive"))
  }

  /** A punctuation from `{"attr": pattern, ...}`; wildcards are left implicit. */
  def punctuation(p: JValue): Punctuation = Punctuation(p match {
    case JObject(fields) => fields.map { case (a, v) => a -> pattern(v) }.filterNot(_._2.isWildcard).toMap
    case other => throw new IllegalArgumentException(s"not a punctuation: $other")
  })

  /** Patterns compare with values normalised (1 == 1.0) through the ordering. */
  def samePattern(a: Pattern, b: Pattern): Boolean = (a, b) match {
    case (Constant(x), Constant(y)) => valueOrdering.equiv(x, y)
    case (ValueList(xs), ValueList(ys)) =>
      xs.size == ys.size && xs.zip(ys).forall { case (x, y) => valueOrdering.equiv(x, y) }
    case (Range(l1, h1), Range(l2, h2)) => sameBound(l1, l2) && sameBound(h1, h2)
    case _ => a == b
  }

  private def sameBound(a: Option[Bound], b: Option[Bound]): Boolean = (a, b) match {
    case (Some(x), Some(y)) => x.inclusive == y.inclusive && valueOrdering.equiv(x.value, y.value)
    case _ => a.isEmpty && b.isEmpty
  }

  def samePunctuation(a: Punctuation, b: Punctuation): Boolean =
    (a.patterns.keySet ++ b.patterns.keySet).forall(k => samePattern(a(k), b(k)))
}
