package punctuated.nexmark

import java.util.Random

import NexmarkRandom._

/**
 * Auctions, re-implementing the reference `AuctionGenerator` (Apache Beam
 * `sdks/java/testing/nexmark/.../sources/generator/model/AuctionGenerator.java`): hot sellers,
 * five categories, log-uniform prices, and an auction length drawn uniformly from
 * `[1, 2 * horizon]` ms, where the horizon is the event time until `numInFlightAuctions` more
 * auctions have been created (so about that many auctions are open at any time).
 */
object AuctionGenerator {
  val NumCategories = 5
  /** Sellers are, with probability `1 - 1/hotSellersRatio`, the first of the last 100 people. */
  val HotSellerRatio = 100

  /** The fields drawn before the strings, enough to know when an auction expires. */
  final case class Head(seller: Long, category: Long, initialBid: Long, expires: Long)

  /** The auction created by event `n` (an auction event). */
  def auction(n: Long, random: Random, clock: EventClock, config: NexmarkConfig): Auction = {
    val timestamp = clock.timestamp(n)
    val h = head(n, random, timestamp, clock, config)
    val name = nextString(random, 20)
    val description = nextString(random, 100)
    val reserve = h.initialBid + nextPrice(random)
    val size = 8 + name.length + description.length + 8 + 8 + 8 + 8 + 8
    val extra = nextExtra(random, size, config.avgAuctionByteSize)
    Auction(EventSequence.lastBase0AuctionId(n) + EventSequence.FirstAuctionId, name, description,
      h.initialBid, reserve, timestamp, h.expires, h.seller, h.category, extra)
  }

  /** When auction `base0` (id from 0) expires, ms since the epoch. */
  def expires(base0: Long, clock: EventClock, config: NexmarkConfig): Long = {
    val n = EventSequence.auctionEvent(base0)
    head(n, EventSequence.random(config.seed, n), clock.timestamp(n), clock, config).expires
  }

  private def head(n: Long, random: Random, timestamp: Long, clock: EventClock,
      config: NexmarkConfig): Head = {
    val seller =
      if (random.nextInt(config.hotSellersRatio) > 0) {
        (EventSequence.lastBase0PersonId(n) / HotSellerRatio) * HotSellerRatio
      } else {
        PersonGenerator.nextBase0PersonId(n, random, config)
      }
    val category = EventSequence.FirstCategoryId + random.nextInt(NumCategories)
    val initialBid = nextPrice(random)
    val expires = timestamp + nextAuctionLengthMs(n, random, timestamp, clock, config)
    Head(seller + EventSequence.FirstPersonId, category, initialBid, expires)
  }

  /** Events until `numInFlightAuctions` more auctions have been created. */
  def inFlightEvents(config: NexmarkConfig): Long =
    config.numInFlightAuctions.toLong * EventSequence.ProportionDenominator /
      EventSequence.AuctionProportion

  private def nextAuctionLengthMs(n: Long, random: Random, timestamp: Long, clock: EventClock,
      config: NexmarkConfig): Long = {
    val horizonMs = clock.timestamp(n + inFlightEvents(config)) - timestamp
    1L + nextLong(random, math.max(horizonMs * 2, 1L))
  }
}
