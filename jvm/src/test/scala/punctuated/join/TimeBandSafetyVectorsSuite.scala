package punctuated.join

import org.apache.spark.sql.AnalysisException
import punctuated.compat.MemoryStream
import org.json4s._

import punctuated.TestVectors
import punctuated.declaration.Declaration._
import punctuated.spark.PunctuatedStreamTest

/**
 * The start-time check judges time-band joins as `punctuated.safety.band` does: the shared
 * vectors `testdata/band_safety_vectors.json` (also run by `tests/test_band_safety.py`) give,
 * per binary join `a.k = b.k` with a band `b.ts - a.ts ∈ [lo, hi]`, each input's
 * purgeability (Li et al. 2006, Theorem 1, with band edges: [[punctuated.spark.rules.TimeBandSafety]]).
 * Each case is started in strict mode: `start()` refuses exactly the unsafe ones, naming
 * exactly the unpurgeable inputs.
 */
class TimeBandSafetyVectorsSuite extends PunctuatedStreamTest {
  import testImplicits._
  import TestVectors.formats

  private val cases = (TestVectors.load("band_safety_vectors.json") \ "cases").children

  test("there are safe and unsafe vectors") {
    val safe = cases.map(c => (c \ "expected" \ "safe").extract[Boolean])
    assert(safe.count(identity) >= 3 && safe.count(!_) >= 3)
  }

  for (c <- cases) {
    val name = (c \ "name").extract[String]
    test(s"strict mode agrees with the vector: $name") {
      val schemes = (c \ "schemes").extract[Map[String, List[List[String]]]]
      val lo = (c \ "band" \ "lo").extractOpt[Long]
      val hi = (c \ "band" \ "hi").extractOpt[Long]
      val purgeable = (c \ "expected" \ "purgeable").extract[Map[String, Boolean]]
      def input(s: String) = {
        val df = MemoryStream[(Option[Int], Option[Long], Option[Int], Boolean)].toDF().toDF("k", "ts", "v", "p")
        val declared = schemes.getOrElse(s, Nil)
        if (declared.isEmpty) df
        else declare(df, s, Schemes -> declared.map(_.mkString(", ")).mkString("; "), Marker -> "p")
      }
      val (a, b) = (input("a"), input("b"))
      val cond = Seq(lo.map(l => b("ts") >= a("ts") + l), hi.map(h => b("ts") <= a("ts") + h)).flatten
        .foldLeft(a("k") === b("k"))(_ && _)
      val query = a.join(b, cond).select(a("k"), a("ts"), b("ts"))
      val start = () => query.writeStream.format("memory").queryName(s"band_${name.replace('-', '_')}").start().stop()
      if (purgeable.values.forall(identity)) start()
      else {
        val e = intercept[AnalysisException](start())
        assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
        for ((s, ok) <- purgeable) {
          assert(e.getMessage.contains(s"The state of input $s of the join") == !ok, s"$s purgeable=$ok: ${e.getMessage}")
        }
      }
    }
  }
}
