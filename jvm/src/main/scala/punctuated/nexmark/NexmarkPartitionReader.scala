package punctuated.nexmark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

/** The events `[start, end)` of the global sequence, read as one table's rows. */
final case class NexmarkInputPartition(config: NexmarkConfig, start: Long, end: Long)
  extends InputPartition

object NexmarkReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new NexmarkPartitionReader(partition.asInstanceOf[NexmarkInputPartition])
}

/**
 * Generates one table's rows for the events of a partition, in event order. With
 * punctuations, the bid table also emits, at the first event whose time is after an
 * auction's expiry, the punctuation "no more bids for this auction" (before that event's
 * own bid); the auctions created before the partition are looked at too, so each auction is
 * punctuated exactly once, in the partition (and hence micro-batch) that holds that event.
 * With time punctuations, every table ends the partition with "no more rows with dateTime
 * <= T", T one microsecond before the time of the partition's end event: event times never
 * decrease with the event number, and every later event is at or after that one.
 */
final class NexmarkPartitionReader(partition: NexmarkInputPartition)
  extends PartitionReader[InternalRow] {

  private val config = partition.config
  private val clock = EventClock(config.baseTime, config.eventsPerSecond)
  private val table = config.table
  private val punctuating = config.punctuatesAuctions
  private lazy val open = new OpenAuctions(clock, config)

  /** Punctuations due in this partition, as (event, auction id from 0), earliest first. */
  private val pending = scala.collection.mutable.PriorityQueue.empty[(Long, Long)](
    Ordering[(Long, Long)].reverse)

  private var n = partition.start
  private var current: InternalRow = _
  private var timePunctuated = !config.timePunctuations || partition.end <= partition.start

  if (punctuating && partition.start > 0) {
    val last = EventSequence.lastBase0AuctionId(partition.start - 1)
    var k = open.oldestPossiblyOpen(partition.start - 1)
    while (k <= last) {
      schedule(k)
      k += 1
    }
  }

  private def schedule(base0: Long): Unit = {
    val at = open.punctuationEvent(base0)
    if (at >= partition.start && at < partition.end) pending.enqueue((at, base0))
  }

  override def next(): Boolean = {
    while (true) {
      if (pending.nonEmpty && pending.head._1 <= n) {
        current = NexmarkSchemas.bidPunctuationRow(pending.dequeue()._2 + EventSequence.FirstAuctionId)
        return true
      }
      if (n >= partition.end) {
        if (timePunctuated) return false
        timePunctuated = true
        current = NexmarkSchemas.timePunctuationRow(table, clock.timestamp(partition.end) * 1000L - 1L)
        return true
      }
      val row = generate(n)
      n += 1
      if (row != null) {
        current = row
        return true
      }
    }
    false
  }

  /** The row of event `e` in this table, or null. */
  private def generate(e: Long): InternalRow = {
    val kind = EventSequence.kindOf(e)
    if (punctuating && kind == NexmarkTableKind.Auction) {
      schedule(EventSequence.lastBase0AuctionId(e))
    }
    if (config.punctuatesSellers && kind == NexmarkTableKind.Person) sellerPunctuation(e)
    else if (kind != table) null
    else {
      val random = EventSequence.random(config.seed, e)
      val p = config.punctuations
      kind match {
        case NexmarkTableKind.Person =>
          NexmarkSchemas.personRow(PersonGenerator.person(e, random, clock.timestamp(e), config), p)
        case NexmarkTableKind.Auction =>
          NexmarkSchemas.auctionRow(AuctionGenerator.auction(e, random, clock, config), p)
        case NexmarkTableKind.Bid =>
          BidGenerator.bid(e, random, clock, open, config).map(NexmarkSchemas.bidRow(_, p)).orNull
      }
    }
  }

  /**
   * The auction stream's seller punctuation at person event `e`, or null. A seller is one of
   * the last `numActivePeople` people or one not created yet, so from `e` on no auction names
   * a person older than that: range scheme, at every
   * [[NexmarkPartitionReader.SellerPunctuationEvery]]-th person, "no more auctions with seller
   * <= s" for the newest such person s; point scheme, at every person, "no more auctions with
   * seller = s" (the one person that has just dropped out of the last `numActivePeople`).
   */
  private def sellerPunctuation(e: Long): InternalRow = {
    val k = EventSequence.lastBase0PersonId(e)
    val closed = k + 1 - config.numActivePeople - 1  // base0 ids <= this are no seller any more
    val due = config.sellerPunctuations == SellerPunctuations.Point ||
      k % NexmarkPartitionReader.SellerPunctuationEvery == 0
    if (closed < 0 || !due) null
    else NexmarkSchemas.sellerPunctuationRow(closed + EventSequence.FirstPersonId)
  }

  override def get(): InternalRow = current

  override def close(): Unit = ()
}

object NexmarkPartitionReader {
  /** The auction stream punctuates `seller<=` at every this-many-th new person (`seller`: at every one). */
  val SellerPunctuationEvery = 10L
}
