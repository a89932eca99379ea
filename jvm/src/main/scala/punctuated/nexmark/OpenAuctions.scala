package punctuated.nexmark

import java.util.Random

/**
 * Which auctions are open at an event: created before it and not expired at its time. One
 * per partition reader; the expiry times it computes are remembered in a ring indexed by
 * auction id, since each is a pure function of (seed, auction id) and neighbouring events
 * ask about the same auctions.
 *
 * This is where the source departs from the reference generator, on purpose: a bid is only
 * ever placed on an open auction, so that the bid stream can punctuate an auction once it
 * has expired (see [[BidGenerator]] and `docs/nexmark.md`).
 */
final class OpenAuctions(clock: EventClock, config: NexmarkConfig) {

  /**
   * Events after which an auction is surely expired: its length is at most twice the event
   * time of [[AuctionGenerator.inFlightEvents]] events, plus rounding.
   */
  val windowEvents: Long =
    2L * AuctionGenerator.inFlightEvents(config) + 3L * config.eventsPerSecond / 1000L + 2L

  private val capacity: Int = {
    val needed = windowEvents * EventSequence.AuctionProportion / EventSequence.ProportionDenominator
    Integer.highestOneBit(math.min(needed * 2 + 64, 1L << 18).toInt) << 1
  }
  private val mask = capacity - 1
  private val ids = Array.fill(capacity)(-1L)
  private val expiry = new Array[Long](capacity)

  /** When auction `base0` expires. */
  def expires(base0: Long): Long = {
    val slot = (base0 & mask).toInt
    if (ids(slot) != base0) {
      expiry(slot) = AuctionGenerator.expires(base0, clock, config)
      ids(slot) = base0
    }
    expiry(slot)
  }

  /** Is auction `base0` open for a bid at event `n`: created before it, not expired. */
  def isOpen(base0: Long, n: Long): Boolean =
    base0 >= 0 && base0 <= EventSequence.lastBase0AuctionId(n) && clock.timestamp(n) <= expires(base0)

  /** No auction with a smaller id is open at event `n`. */
  def oldestPossiblyOpen(n: Long): Long =
    math.max(0L, EventSequence.lastBase0AuctionId(math.max(0L, n - windowEvents)))

  /**
   * An open auction for a bid at event `n`, drawn uniformly among those open (by rejection,
   * then by a scan from the newest); None when no auction is open.
   */
  def drawOpen(n: Long, random: Random): Option[Long] = {
    val lo = oldestPossiblyOpen(n)
    val hi = EventSequence.lastBase0AuctionId(n)
    if (hi < lo) return None
    var tries = 0
    while (tries < 32) {
      val k = lo + NexmarkRandom.nextLong(random, hi - lo + 1)
      if (isOpen(k, n)) return Some(k)
      tries += 1
    }
    var k = hi
    while (k >= lo) {
      if (isOpen(k, n)) return Some(k)
      k -= 1
    }
    None
  }

  /**
   * The event at which the bid stream punctuates auction `base0`: the first whose time is
   * after the auction's expiry, so after every bid on it.
   */
  def punctuationEvent(base0: Long): Long = clock.firstEventAfter(expires(base0))
}
