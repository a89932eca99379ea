package punctuated.join.shedding

import org.json4s._
import org.scalatest.funsuite.AnyFunSuite

import punctuated.TestVectors

/**
 * The join's [[FrequencyEstimator]] on the shared vectors `testdata/shedding_estimator_vectors.json`
 * ("estimator": arrival batches of int join values -> the map after each batch), which the
 * Python replay (`punctuated.shedding`) runs too: both implement one update rule.
 */
class EstimatorVectorsSuite extends AnyFunSuite {
  implicit val formats: Formats = DefaultFormats

  private val cases = (TestVectors.load("shedding_estimator_vectors.json") \ "estimator").children

  test("the vectors are there") {
    assert(cases.size >= 5)
  }

  for (c <- cases) test(s"estimator: ${(c \ "name").extract[String]}") {
    val e = new FrequencyEstimator[Long]((c \ "H").extract[Long], (c \ "K").extract[Int])
    val batches = (c \ "batches").extract[List[List[Long]]]
    val after = (c \ "after").extract[List[List[List[Long]]]]
    batches.zip(after).zipWithIndex.foreach { case ((batch, expected), b) =>
      e.update(batch.groupBy(identity).map { case (v, vs) => v -> vs.size.toLong }, b.toLong)
      val got = e.counts.toList.sortBy(_._1).map { case (v, n) => List(v, n) }
      assert(got == expected, s"after batch $b of ${(c \ "name").extract[String]}")
    }
  }
}
