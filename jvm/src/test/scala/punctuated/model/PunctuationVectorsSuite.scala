package punctuated.model

import org.json4s._
import org.scalatest.funsuite.AnyFunSuite

import punctuated.TestVectors
import punctuated.TestVectors._

/** `match` and `combine` (Tucker et al. 2003, §3.1) against the shared vectors. */
class PunctuationVectorsSuite extends AnyFunSuite {
  private val vectors = TestVectors.load("punctuation_vectors.json")

  (vectors \ "combine").children.foreach { v =>
    test(s"combine: ${(v \ "name").extract[String]}") {
      val p1 = punctuation(v \ "p1")
      val p2 = punctuation(v \ "p2")
      val expected = (v \ "expect") match {
        case JNull => None
        case p => Some(punctuation(p))
      }
      for ((a, b) <- Seq(p1 -> p2, p2 -> p1)) {
        val got = a.combine(b)
        assert(got.isDefined == expected.isDefined, s"combine($a, $b) = $got, expected $expected")
        got.zip(expected).foreach { case (g, e) => assert(samePunctuation(g, e), s"$g != $e") }
      }
    }
  }

  (vectors \ "match").children.foreach { v =>
    test(s"match: ${(v \ "name").extract[String]}") {
      val p = punctuation(v \ "p")
      val t = (v \ "t").asInstanceOf[JObject].obj.map { case (k, x) => k -> value(x) }.toMap
      assert(p.matches(t) == (v \ "expect").extract[Boolean])
    }
  }
}
