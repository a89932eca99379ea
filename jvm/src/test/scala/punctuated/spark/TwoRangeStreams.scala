package punctuated.spark

import org.apache.spark.sql.DataFrame
import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._

/**
 * Streams of readings `(sensor, day, level, v, p)` declared with a scheme of two ranges, and
 * their rows and punctuations, for [[TwoRangeSchemeSuite]] and [[TwoRangeJoinSuite]].
 */
abstract class TwoRangeStreams extends PunctuatedStreamTest {
  import testImplicits._

  protected type R = (Option[Int], Option[Int], Option[Int], Option[Int], Boolean)
  protected def row(sensor: Int, day: Int, level: Int, v: Int): R = (Some(sensor), Some(day), Some(level), Some(v), false)
  /** "no more rows with day <= d and level <= l" (any sensor) */
  protected def upTo(day: Int, level: Int): R = (None, Some(day), Some(level), None, true)
  /** "no more rows of `sensor` with day <= d and level <= l" */
  protected def upTo(sensor: Int, day: Int, level: Int): R = (Some(sensor), Some(day), Some(level), None, true)

  protected def readings(s: MemoryStream[R], scheme: String): DataFrame =
    declare(s.toDF().toDF("sensor", "day", "level", "v", "p"), "readings", Schemes -> scheme, Marker -> "p")
}
