package punctuated.nexmark

/**
 * The global NEXMark event sequence: what event number `n` (0, 1, 2, ...) is, which ids it
 * creates or may refer to, and its random stream.
 *
 * Follows the reference generator (Apache Beam `sdks/java/testing/nexmark`,
 * `GeneratorConfig`, `PersonGenerator.lastBase0PersonId`, `AuctionGenerator.lastBase0AuctionId`)
 * with one generator and no out-of-order groups: of every 50 events the first is a person,
 * the next 3 are auctions and the last 46 are bids; person and auction ids count from 1000
 * in creation order.
 */
object EventSequence {
  val FirstPersonId = 1000L
  val FirstAuctionId = 1000L
  val FirstCategoryId = 10L

  val PersonProportion = 1
  val AuctionProportion = 3
  val BidProportion = 46
  val ProportionDenominator: Int = PersonProportion + AuctionProportion + BidProportion

  /** The table event `n` belongs to. */
  def kindOf(n: Long): NexmarkTableKind = {
    val rem = n % ProportionDenominator
    if (rem < PersonProportion) NexmarkTableKind.Person
    else if (rem < PersonProportion + AuctionProportion) NexmarkTableKind.Auction
    else NexmarkTableKind.Bid
  }

  /** The last person id (from 0) created at or before event `n`; -1 before the first. */
  def lastBase0PersonId(n: Long): Long = {
    val epoch = n / ProportionDenominator
    val offset = math.min(n % ProportionDenominator, PersonProportion - 1L)
    epoch * PersonProportion + offset
  }

  /** The last auction id (from 0) created at or before event `n`; -1 before the first. */
  def lastBase0AuctionId(n: Long): Long = {
    var epoch = n / ProportionDenominator
    var offset = n % ProportionDenominator
    if (offset < PersonProportion) {
      epoch -= 1
      offset = AuctionProportion - 1
    } else if (offset >= PersonProportion + AuctionProportion) {
      offset = AuctionProportion - 1
    } else {
      offset -= PersonProportion
    }
    epoch * AuctionProportion + offset
  }

  /** The event number that creates auction `base0` (the inverse of [[lastBase0AuctionId]]). */
  def auctionEvent(base0: Long): Long =
    (base0 / AuctionProportion) * ProportionDenominator + PersonProportion + base0 % AuctionProportion

  /**
   * The random stream of event `n`. The reference seeds `java.util.Random` with the event id;
   * seed 0 does exactly that, any other seed mixes itself in first. Never the wall clock.
   */
  def random(seed: Long, n: Long): java.util.Random =
    new java.util.Random(if (seed == 0L) n else n ^ mix(seed))

  private def mix(seed: Long): Long = {
    var z = seed + 0x9E3779B97F4A7C15L
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL
    z ^ (z >>> 31)
  }
}

/**
 * Event time of the event sequence: event `n` happens at `baseTime + floor(n * 1000 /
 * eventsPerSecond)` ms, the reference's fixed-rate `timestampAndInterEventDelayUsForEvent`
 * (exactly it when `eventsPerSecond` divides 10^6; computed without the reference's rounding
 * of the inter-event delay to whole microseconds otherwise).
 */
final case class EventClock(baseTime: Long, eventsPerSecond: Long) {

  /** Event time of event `n`, ms since the epoch. */
  def timestamp(n: Long): Long =
    baseTime + (n / eventsPerSecond) * 1000L + (n % eventsPerSecond) * 1000L / eventsPerSecond

  /** The first event whose time is after `timeMs` (ms since the epoch). */
  def firstEventAfter(timeMs: Long): Long = {
    val a = timeMs - baseTime + 1 // need floor(n * 1000 / eps) >= a, i.e. n >= ceil(a * eps / 1000)
    if (a <= 0) 0L
    else (a / 1000L) * eventsPerSecond + ceilDiv((a % 1000L) * eventsPerSecond, 1000L)
  }

  private def ceilDiv(x: Long, y: Long): Long = (x + y - 1) / y
}
