package punctuated.nexmark

import org.apache.spark.sql.connector.read.streaming.Offset

/**
 * Position in the global NEXMark event sequence: the number of events (of all three
 * kinds) generated before it. Since every event is a pure function of (options, event
 * number), a micro-batch re-run from a checkpoint produces exactly the same rows.
 */
final case class NexmarkOffset(events: Long) extends Offset {
  require(events >= 0, s"nexmark: negative offset $events")
  override def json(): String = events.toString
}

object NexmarkOffset {
  def fromJson(json: String): NexmarkOffset =
    try NexmarkOffset(json.trim.toLong) catch {
      case _: NumberFormatException =>
        throw new IllegalArgumentException(s"nexmark: '$json' is not a nexmark offset")
    }
}
