package punctuated.aggregate

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, count, window}

import punctuated.compat.MemoryStream
import punctuated.declaration.Declaration._
import punctuated.spark.PunctuatedStreamTest

/**
 * The per-sensor sliding-window count several suites run: readings declared `sensor; ts<=`
 * (a sensor's punctuation fixes part of the grouping key, the range on `ts` concerns every
 * partition), counted per sensor and 10-minute window sliding by 5 minutes.
 *
 * Example: `val (input, out) = perSensor()`, then `AddData(input, reading(1, "10:01", 1.0),
 * upTo("10:10"))` closes sensor 1's windows ending by 10:10 ([[EventTimeAggregateSuite]]'s rows).
 */
trait PerSensorWindows extends PunctuatedStreamTest {
  import testImplicits._
  import EventTimeAggregateSuite._

  /** The input stream and `(sensor, start, n)` per sensor and window. */
  protected def perSensor(): (MemoryStream[TimedReading], DataFrame) = {
    val input = MemoryStream[TimedReading]
    val r = declare(input.toDF(), "readings", Schemes -> "sensor; ts<=", Marker -> "is_punct")
    (input, r.groupBy(col("sensor"), window(col("ts"), "10 minutes", "5 minutes")).agg(count("*").as("n"))
      .select(col("sensor"), col("window.start"), col("n")))
  }
}
