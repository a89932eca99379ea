package punctuated.join

import org.apache.spark.sql.DataFrame

import punctuated.compat.MemoryStream
import punctuated.declaration.Declaration._
import punctuated.spark.PunctuatedStreamTest

/**
 * Readings `(day, sensor, p)` joined with days `(day, name, p)` on `day`, both inputs declaring
 * the range scheme `day<=` (marker `p`): a punctuation "no more rows with day <= d" concerns
 * every partition, so it goes through the replicating shuffle.
 *
 * Example: `val (readings, days, joined) = dayRangeJoin()`, then `AddData(days, (Some(3),
 * None, true))` says no more days <= 3, and the readings of days 1 .. 3 can go.
 */
trait DayRangeJoin extends PunctuatedStreamTest {
  import testImplicits._

  /** The readings, the days, and `(day, sensor, name)` per joined pair. */
  protected def dayRangeJoin(): (MemoryStream[(Option[Int], Option[Long], Boolean)],
      MemoryStream[(Option[Int], Option[String], Boolean)], DataFrame) = {
    val readings = MemoryStream[(Option[Int], Option[Long], Boolean)]
    val days = MemoryStream[(Option[Int], Option[String], Boolean)]
    val r = declare(readings.toDF().toDF("day", "sensor", "p"), "readings", Schemes -> "day<=", Marker -> "p")
    val d = declare(days.toDF().toDF("day", "name", "p"), "days", Schemes -> "day<=", Marker -> "p")
    (readings, days, r.join(d, r("day") === d("day")).select(r("day"), r("sensor"), d("name")))
  }
}
