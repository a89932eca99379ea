package punctuated.nexmark

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.JsonNodeType

import org.apache.spark.sql.connector.read.streaming.Offset

/**
 * Position in the global NEXMark event sequence: the number of events (of all three
 * kinds) generated before it. Since every event is a pure function of (options, event
 * number), a micro-batch re-run from a checkpoint produces exactly the same rows — as long
 * as the options that decide the rows are the same. So the offset also records them
 * ([[NexmarkOffset.fingerprint]]), and a restart with other values fails
 * ([[NexmarkOffset.check]]) instead of mixing two different event sequences in one query.
 *
 * JSON: `{"events":1200,"options":{"table":"bid","seed":"0",...}}`. Offsets written before
 * the options were recorded are a bare number (`1200`); they are still read (and checked
 * against nothing). An option added to the record later is absent from older offsets, which
 * were generated as that option's [[NexmarkOffset.ImpliedWhenAbsent]] value says (before
 * `timePunctuations` there were none; before `auctionPunctuations` the bid stream always had
 * them), and is checked against that value.
 *
 * @param events  events of the global sequence before this position
 * @param options the generator options the events were generated with (empty: unknown).
 *                Not part of equality: two offsets at the same event are the same position.
 */
final case class NexmarkOffset(events: Long)(val options: Map[String, String] = Map.empty) extends Offset {
  require(events >= 0, s"nexmark: negative offset $events")
  override def json(): String =
    if (options.isEmpty) events.toString
    else {
      val node = NexmarkOffset.mapper.createObjectNode()
      node.put("events", events)
      val opts = node.putObject("options")
      options.toSeq.sortBy(_._1).foreach { case (k, v) => opts.put(k, v) }
      NexmarkOffset.mapper.writeValueAsString(node)
    }
}

object NexmarkOffset {
  private val mapper = new ObjectMapper()

  /** The options that decide which rows the events are (not the batching or partitioning). */
  def fingerprint(config: NexmarkConfig): Map[String, String] = Map(
    NexmarkConfig.Table -> config.table.name,
    NexmarkConfig.EventsPerSecond -> config.eventsPerSecond.toString,
    NexmarkConfig.Seed -> config.seed.toString,
    NexmarkConfig.BaseTime -> config.baseTime.toString,
    NexmarkConfig.Punctuations -> config.punctuations.toString,
    NexmarkConfig.SellerPunctuations -> config.sellerPunctuations.name,
    NexmarkConfig.TimePunctuations -> config.timePunctuations.toString,
    NexmarkConfig.AuctionPunctuations -> config.auctionPunctuations.toString)

  /**
   * The options recorded only since a later version, with the value an offset recorded before
   * them was generated with: compared as if it were recorded (an offset with no options at
   * all, a bare number, is still checked against nothing).
   *
   * {{{
   *   old offset {"options":{"table":"bid",...}}  (no auctionPunctuations: bids carried them)
   *   restart with auctionPunctuations=false  ->  NEXMARK_OPTIONS_CHANGED, "auctionPunctuations = true"
   * }}}
   */
  val ImpliedWhenAbsent: Map[String, String] = Map(
    NexmarkConfig.TimePunctuations -> "false",
    NexmarkConfig.AuctionPunctuations -> "true")

  /** An offset of a stream with these options. */
  def apply(events: Long, config: NexmarkConfig): NexmarkOffset = NexmarkOffset(events)(fingerprint(config))

  def fromJson(json: String): NexmarkOffset = {
    def bad() = new IllegalArgumentException(s"nexmark: '$json' is not a nexmark offset")
    val text = json.trim
    if (!text.startsWith("{")) {
      try NexmarkOffset(text.toLong)() catch { case _: NumberFormatException => throw bad() }
    } else {
      val node = try mapper.readTree(text) catch { case _: Exception => throw bad() }
      val events = node.get("events")
      if (events == null || !events.canConvertToLong) throw bad()
      val options = Option(node.get("options")).filter(_.getNodeType == JsonNodeType.OBJECT).map { o =>
        val names = o.fieldNames()
        val b = Map.newBuilder[String, String]
        while (names.hasNext) { val n = names.next(); b += n -> o.get(n).asText() }
        b.result()
      }.getOrElse(Map.empty)
      NexmarkOffset(events.asLong())(options)
    }
  }

  /**
   * Fails if `offset` (read from a checkpoint) was written with other generator options than
   * the stream's `config` now has, naming the option, both values and the fix.
   */
  def check(offset: NexmarkOffset, config: NexmarkConfig): Unit = if (offset.options.nonEmpty) {
    val now = fingerprint(config)
    (ImpliedWhenAbsent ++ offset.options).toSeq.sortBy(_._1).foreach { case (k, old) =>
      now.get(k).filter(_ != old).foreach { current =>
        throw new IllegalStateException(
          s"[NEXMARK_OPTIONS_CHANGED] nexmark: option $k is $current, but the checkpoint's offsets " +
            s"were generated with $k = $old. The source's rows depend on $k, so the events after " +
            s"the restart would not continue the checkpointed ones. Restart with $k = $old, or use a " +
            "new checkpoint location for the new options.")
      }
    }
  }
}
