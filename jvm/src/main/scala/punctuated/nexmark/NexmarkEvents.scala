package punctuated.nexmark

/**
 * The three NEXMark event types, with the field names and types of the reference model
 * (Apache Beam `org.apache.beam.sdk.nexmark.model`; `channel` and `url` of a bid as in the
 * `nexmark/nexmark` Flink generator). Times are ms since the epoch; prices are in cents.
 */
final case class Person(
    id: Long,
    name: String,
    emailAddress: String,
    creditCard: String,
    city: String,
    state: String,
    dateTime: Long,
    extra: String)

final case class Auction(
    id: Long,
    itemName: String,
    description: String,
    initialBid: Long,
    reserve: Long,
    dateTime: Long,
    expires: Long,
    seller: Long,
    category: Long,
    extra: String)

final case class Bid(
    auction: Long,
    bidder: Long,
    price: Long,
    channel: String,
    url: String,
    dateTime: Long,
    extra: String)
