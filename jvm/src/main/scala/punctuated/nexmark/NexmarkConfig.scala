package punctuated.nexmark

import java.util.Locale

import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * The options of the `nexmark` source (see `docs/nexmark.md`).
 *
 * The generator constants not exposed as options keep the reference generator's defaults
 * (Apache Beam `NexmarkConfiguration`: `numInFlightAuctions` 100, `numActivePeople` 1000,
 * `hotAuctionRatio` 2, `hotSellersRatio` 4, `hotBiddersRatio` 4, average event sizes
 * 200 / 500 / 100 bytes for person / auction / bid).
 *
 * @param table           which stream this source reads
 * @param eventsPerSecond event-time rate of the global event sequence (all three streams)
 * @param totalEvents     number of events after which the stream ends (None: unbounded)
 * @param eventsPerBatch  most events (of the global sequence) per micro-batch
 * @param seed            random seed; the same seed gives the same events
 * @param numPartitions   Spark partitions per micro-batch
 * @param baseTime        event time of event 0, ms since the epoch
 * @param punctuations    add the `is_punct` marker column and the bid stream's punctuations
 * @param declare         with punctuations: the table declares its schemes itself
 * @param sellerPunctuations with punctuations: whether and how the auction stream also says
 *                        that person `p` can be no seller any more: "no more auctions with
 *                        seller <= p" (scheme `seller<=`) or "... with seller = p" (scheme
 *                        `seller`), see [[SellerPunctuations]]
 * @param timePunctuations with punctuations: every table also says, at the end of each
 *                        partition of a micro-batch, "no more rows with dateTime <= T" (scheme
 *                        `dateTime<=`), T one microsecond before the time of the next event
 * @param auctionPunctuations with punctuations: the bid stream punctuates each auction once it
 *                        has expired (scheme `auction`); `false` leaves those out (with
 *                        `timePunctuations`, the bid stream's one scheme is then `dateTime<=`)
 */
final case class NexmarkConfig(
    table: NexmarkTableKind,
    eventsPerSecond: Long = 10000L,
    totalEvents: Option[Long] = None,
    eventsPerBatch: Long = 100000L,
    seed: Long = 0L,
    numPartitions: Int = 2,
    baseTime: Long = 0L,
    punctuations: Boolean = false,
    declare: Boolean = true,
    sellerPunctuations: SellerPunctuations = punctuated.nexmark.SellerPunctuations.Off,
    timePunctuations: Boolean = false,
    auctionPunctuations: Boolean = true) {

  require(eventsPerSecond > 0, s"nexmark: eventsPerSecond must be > 0, got $eventsPerSecond")
  require(totalEvents.forall(_ >= 0), s"nexmark: totalEvents must be >= 0, got ${totalEvents.get}")
  require(eventsPerBatch > 0, s"nexmark: eventsPerBatch must be > 0, got $eventsPerBatch")
  require(numPartitions > 0, s"nexmark: numPartitions must be > 0, got $numPartitions")
  require(baseTime >= 0, s"nexmark: baseTime must be >= 0, got $baseTime")
  require(!timePunctuations || punctuations,
    "nexmark: option timePunctuations needs punctuations = true (the marker column carries them)")
  require(auctionPunctuations || timePunctuations || !punctuations || table != NexmarkTableKind.Bid,
    "nexmark: the bid table with punctuations = true and auctionPunctuations = false needs " +
      "timePunctuations = true (else it has no punctuation scheme); or set punctuations = false")

  val numInFlightAuctions: Int = 100
  val numActivePeople: Int = 1000
  val hotAuctionRatio: Int = 2
  val hotSellersRatio: Int = 4
  val hotBiddersRatio: Int = 4
  val avgPersonByteSize: Int = 200
  val avgAuctionByteSize: Int = 500
  val avgBidByteSize: Int = 100

  /** Does the bid stream punctuate auctions (scheme `auction`)? */
  def punctuatesAuctions: Boolean =
    punctuations && auctionPunctuations && table == NexmarkTableKind.Bid

  /** Does the auction stream punctuate `seller<=` or `seller`? */
  def punctuatesSellers: Boolean =
    punctuations && sellerPunctuations != punctuated.nexmark.SellerPunctuations.Off &&
      table == NexmarkTableKind.Auction

  /** Last event number + 1 (`Long.MaxValue` when unbounded). */
  def endEvent: Long = totalEvents.getOrElse(Long.MaxValue)
}

object NexmarkConfig {
  val Table = "table"
  val EventsPerSecond = "eventsPerSecond"
  val TotalEvents = "totalEvents"
  val EventsPerBatch = "eventsPerBatch"
  val Seed = "seed"
  val NumPartitions = "numPartitions"
  val BaseTime = "baseTime"
  val Punctuations = "punctuations"
  val Declare = "declare"
  val SellerPunctuations = "sellerPunctuations"
  val TimePunctuations = "timePunctuations"
  val AuctionPunctuations = "auctionPunctuations"

  def apply(options: CaseInsensitiveStringMap): NexmarkConfig = {
    def long(key: String): Option[Long] = Option(options.get(key)).map { v =>
      try v.trim.toLong catch {
        case _: NumberFormatException =>
          throw new IllegalArgumentException(s"nexmark: option $key = '$v' is not an integer")
      }
    }
    def bool(key: String): Option[Boolean] = Option(options.get(key)).map { v =>
      v.trim.toLowerCase(Locale.ROOT) match {
        case "true" => true
        case "false" => false
        case _ => throw new IllegalArgumentException(s"nexmark: option $key = '$v' is not true/false")
      }
    }
    val table = Option(options.get(Table)).map(NexmarkTableKind.parse).getOrElse(
      throw new IllegalArgumentException(
        "nexmark: option table is required (person, auction or bid)"))
    val d = NexmarkConfig(table)
    NexmarkConfig(
      table = table,
      eventsPerSecond = long(EventsPerSecond).getOrElse(d.eventsPerSecond),
      totalEvents = long(TotalEvents),
      eventsPerBatch = long(EventsPerBatch).getOrElse(d.eventsPerBatch),
      seed = long(Seed).getOrElse(d.seed),
      numPartitions = long(NumPartitions).map(_.toInt).getOrElse(d.numPartitions),
      baseTime = long(BaseTime).getOrElse(d.baseTime),
      punctuations = bool(Punctuations).getOrElse(d.punctuations),
      declare = bool(Declare).getOrElse(d.declare),
      sellerPunctuations = Option(options.get(SellerPunctuations))
        .map(punctuated.nexmark.SellerPunctuations.parse).getOrElse(d.sellerPunctuations),
      timePunctuations = bool(TimePunctuations).getOrElse(d.timePunctuations),
      auctionPunctuations = bool(AuctionPunctuations).getOrElse(d.auctionPunctuations))
  }
}
