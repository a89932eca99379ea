package punctuated.nexmark

import java.util.Random

import NexmarkRandom._

/**
 * Bids, re-implementing the reference `BidGenerator` (Apache Beam
 * `sdks/java/testing/nexmark/.../sources/generator/model/BidGenerator.java`; `channel` and `url`
 * as in the `nexmark/nexmark` Flink generator): hot auctions and hot bidders, log-uniform
 * prices.
 *
 * Deviation: the reference may pick an auction that is not created yet (a lead of 10 ids) or
 * has already expired, and leaves it to the queries to drop such bids. Here a bid whose drawn
 * auction is not open at the bid's time is placed, instead, on an auction drawn uniformly among
 * the open ones ([[OpenAuctions.drawOpen]]), so no bid follows its auction's expiry and the
 * stream can punctuate expired auctions. In the (vanishingly rare) case that no auction is
 * open, the event is no bid at all.
 */
object BidGenerator {
  /** Hot auctions are the first of the last 100 auctions. */
  val HotAuctionRatio = 100
  /** Hot bidders are the second of the last 100 people. */
  val HotBidderRatio = 100
  /** Auction ids not created yet that the reference may bid on. */
  val AuctionIdLead = 10

  /** The bid of event `n` (a bid event), or None if no auction is open. */
  def bid(n: Long, random: Random, clock: EventClock, open: OpenAuctions,
      config: NexmarkConfig): Option[Bid] = {
    val drawn =
      if (random.nextInt(config.hotAuctionRatio) > 0) {
        (EventSequence.lastBase0AuctionId(n) / HotAuctionRatio) * HotAuctionRatio
      } else {
        nextBase0AuctionId(n, random, config)
      }
    val auction = if (open.isOpen(drawn, n)) Some(drawn) else open.drawOpen(n, random)
    auction.map { a =>
      val bidder =
        if (random.nextInt(config.hotBiddersRatio) > 0) {
          (EventSequence.lastBase0PersonId(n) / HotBidderRatio) * HotBidderRatio + 1
        } else {
          PersonGenerator.nextBase0PersonId(n, random, config)
        }
      val price = nextPrice(random)
      val (channel, url) = Channels.next(random)
      val extra = nextExtra(random, 8 + 8 + 8 + 8, config.avgBidByteSize)
      Bid(a + EventSequence.FirstAuctionId, bidder + EventSequence.FirstPersonId, price, channel, url,
        clock.timestamp(n), extra)
    }
  }

  /** The reference's draw: one of the last `numInFlightAuctions` auctions, or a lead. */
  private def nextBase0AuctionId(n: Long, random: Random, config: NexmarkConfig): Long = {
    val max = EventSequence.lastBase0AuctionId(n)
    val min = math.max(max - config.numInFlightAuctions, 0L)
    min + nextLong(random, max - min + 1 + AuctionIdLead)
  }
}
