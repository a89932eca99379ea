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

  /**
   * The "replay" vectors with one pool for both streams (`variable`, as the operator's budget)
   * and PROB: a sliding-window join replayed step by step (one step = one batch), whose
   * victims are chosen by the operator's own order ([[Priorities.victims]]) with the
   * estimator above. The vectors break ties by trace position (the earlier arrival goes); the
   * operator's order breaks them by batch (rows of earlier batches first), then by a content
   * hash: with the position in place of the hash, the two orders are one. (`life` there uses
   * the window's remaining time, the operator the observed key lifetimes; `fixed` splits the
   * memory per stream, the operator has one budget: those cases are the Python replay's only.)
   */
  private val replays = (TestVectors.load("shedding_estimator_vectors.json") \ "replay").children
    .filter(c => (c \ "allocation").extract[String] == "variable" && (c \ "policy").extract[String] == "prob")

  for (c <- replays) test(s"replay: ${(c \ "name").extract[String]}") {
    case class Tuple(stream: Int, time: Long, value: Long, position: Int)
    val window = (c \ "window").extract[Long]
    val memory = (c \ "memory").extract[Int]
    val warmup = (c \ "warmup").extract[Long]
    val arrivals = (c \ "arrivals").children.zipWithIndex.map { case (a, pos) =>
      val List(t, s, v) = a.children
      Tuple(if (s.extract[String] == "R") 0 else 1, t.extract[Long], v.extract[Long], pos)
    }
    val estimators = IndexedSeq.fill(2)(new FrequencyEstimator[Long]((c \ "H").extract[Long], (c \ "K").extract[Int]))
    var held = Vector.empty[Tuple]
    var output = 0L
    var shed = 0L
    val heldAfter = (0L to arrivals.map(_.time).max).map { t =>
      val now = arrivals.filter(_.time == t)
      val results = now.map(a => held.count(h => h.stream != a.stream && h.value == a.value)).sum +
        now.filter(_.stream == 0).map(r => now.count(s => s.stream == 1 && s.value == r.value)).sum
      if (t >= warmup) output += results
      held = held.filter(h => h.time + window - 1 > t) ++ now.filter(a => a.time + window - 1 > t)
      val totals = estimators.map(_.total)
      val candidates = held.map { h =>
        Priorities.Candidate(Priorities.prob(estimators(1 - h.stream).estimate(h.value), totals(1 - h.stream)),
          fresh = h.time == t, h.position, h.stream, Array.emptyByteArray)
      }
      val victims = Priorities.victims(candidates, held.size - memory).toSet
      shed += victims.size
      held = held.zipWithIndex.filterNot { case (_, i) => victims(i) }.map(_._1)
      (0 to 1).foreach { s =>
        estimators(s).update(now.filter(_.stream == s).groupBy(_.value).map { case (v, vs) => v -> vs.size.toLong }, t)
      }
      held.map(h => (if (h.stream == 0) "R" else "S", h.time, h.value)).sorted
    }
    val expected = (c \ "held").children.map(_.children.map { e =>
      val List(s, t, v) = e.children
      (s.extract[String], t.extract[Long], v.extract[Long])
    }.sorted)
    assert(heldAfter.toList == expected, "held tuples per step")
    assert(shed == (c \ "shed").extract[Long] && output == (c \ "output").extract[Long], s"shed $shed, output $output")
  }
}
