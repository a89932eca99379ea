package punctuated.nexmark

import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow}

/**
 * The micro-batch stream of one NEXMark table. Offsets count events of the global
 * sequence (all three kinds); a micro-batch takes at most `eventsPerBatch` events (or the
 * trigger's `maxRows` limit) and the stream ends at `totalEvents`. Every event is available
 * at once: `eventsPerSecond` sets event time, not the pace of the batches.
 */
final class NexmarkMicroBatchStream(config: NexmarkConfig)
  extends MicroBatchStream with SupportsTriggerAvailableNow {

  /** With `Trigger.AvailableNow`: the offset to stop at, fixed at the first batch. */
  private var availableNowEnd: Option[Long] = None
  private var availableNow = false

  override def initialOffset(): Offset = NexmarkOffset(0L, config)

  override def latestOffset(): Offset =
    throw new UnsupportedOperationException("nexmark: latestOffset(start, limit) is to be used")

  override def getDefaultReadLimit: ReadLimit = ReadLimit.maxRows(config.eventsPerBatch)

  override def latestOffset(startOffset: Offset, limit: ReadLimit): Offset = {
    val start = events(startOffset)
    val max = limit match {
      case m: ReadMaxRows => m.maxRows()
      case _ => config.eventsPerBatch
    }
    val next = if (start > config.endEvent - max) config.endEvent else start + max
    if (availableNow) {
      val stop = availableNowEnd.getOrElse {
        val s = config.totalEvents.getOrElse(next)
        availableNowEnd = Some(s)
        s
      }
      NexmarkOffset(math.max(start, math.min(next, stop)), config)
    } else {
      NexmarkOffset(math.max(start, next), config)
    }
  }

  override def prepareForTriggerAvailableNow(): Unit = availableNow = true

  override def reportLatestOffset(): Offset = config.totalEvents.map(NexmarkOffset(_, config)).orNull

  /** Offsets from the checkpoint: they must come from a stream with the same generator options. */
  override def deserializeOffset(json: String): Offset = {
    val offset = NexmarkOffset.fromJson(json)
    NexmarkOffset.check(offset, config)
    offset
  }

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (s, e) = (events(start), events(end))
    require(s <= e, s"nexmark: start offset $s after end offset $e")
    if (s == e) Array.empty
    else {
      val parts = math.min(config.numPartitions.toLong, e - s).toInt
      (0 until parts).map { i =>
        NexmarkInputPartition(config, s + (e - s) * i / parts, s + (e - s) * (i + 1) / parts)
      }.toArray
    }
  }

  override def createReaderFactory(): PartitionReaderFactory = NexmarkReaderFactory

  override def commit(end: Offset): Unit = ()

  override def stop(): Unit = ()

  override def toString: String = s"NexmarkMicroBatchStream[$config]"

  private def events(offset: Offset): Long = offset match {
    case o: NexmarkOffset => o.events
    case other => NexmarkOffset.fromJson(other.json()).events
  }
}
