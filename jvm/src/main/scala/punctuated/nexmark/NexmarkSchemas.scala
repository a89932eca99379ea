package punctuated.nexmark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Schemas of the three streams (field names and types of the reference model, see
 * [[Person]], [[Auction]], [[Bid]]) and the rows that carry events and punctuations.
 *
 * With punctuations, every table gets the BOOLEAN marker column [[Marker]]; a punctuation
 * row sets its scheme's columns and the marker and leaves every other column NULL (user
 * contract, `punctuated.marker`) — a bid punctuation sets `auction`; a punctuated join's output
 * punctuation on a person's or auction's unique `id` sets `id` — so the other columns are
 * then nullable.
 */
object NexmarkSchemas {
  val Marker = "is_punct"

  def schema(config: NexmarkConfig): StructType = {
    val p = config.punctuations
    val t = config.timePunctuations
    val base = config.table match {
      case NexmarkTableKind.Person => StructType(Seq(
        StructField("id", LongType, nullable = t),
        StructField("name", StringType, nullable = p),
        StructField("emailAddress", StringType, nullable = p),
        StructField("creditCard", StringType, nullable = p),
        StructField("city", StringType, nullable = p),
        StructField("state", StringType, nullable = p),
        StructField("dateTime", TimestampType, nullable = p),
        StructField("extra", StringType, nullable = p)))
      case NexmarkTableKind.Auction => val q = config.punctuatesSellers || t; StructType(Seq(
        StructField("id", LongType, nullable = q),
        StructField("itemName", StringType, nullable = p),
        StructField("description", StringType, nullable = p),
        StructField("initialBid", LongType, nullable = p),
        StructField("reserve", LongType, nullable = p),
        StructField("dateTime", TimestampType, nullable = p),
        StructField("expires", TimestampType, nullable = p),
        StructField("seller", LongType, nullable = p),
        StructField("category", LongType, nullable = p),
        StructField("extra", StringType, nullable = p)))
      case NexmarkTableKind.Bid => StructType(Seq(
        StructField("auction", LongType, nullable = t),
        StructField("bidder", LongType, nullable = p),
        StructField("price", LongType, nullable = p),
        StructField("channel", StringType, nullable = p),
        StructField("url", StringType, nullable = p),
        StructField("dateTime", TimestampType, nullable = p),
        StructField("extra", StringType, nullable = p)))
    }
    if (p) base.add(StructField(Marker, BooleanType, nullable = false)) else base
  }

  /**
   * The punctuation declaration of a table with punctuations (user contract table
   * properties): bids punctuate `auction`; people and auctions have unique ids.
   */
  def declaration(table: NexmarkTableKind): Map[String, String] = table match {
    case NexmarkTableKind.Bid => Map("punctuated.schemes" -> "auction", "punctuated.marker" -> Marker)
    case _ => Map("punctuated.unique" -> "id", "punctuated.marker" -> Marker)
  }

  /**
   * The declaration of the configured table (auctions may also punctuate `seller<=` or
   * `seller`; with time punctuations every table also declares `dateTime<=`; bids leave out
   * `auction` under `auctionPunctuations=false`).
   */
  def declaration(config: NexmarkConfig): Map[String, String] = {
    val base = declaration(config.table)
    // the bid stream's `auction` scheme, unless its auction punctuations are left out
    val own = if (config.table == NexmarkTableKind.Bid && !config.auctionPunctuations) Nil
      else base.get("punctuated.schemes").toSeq
    val schemes = own ++ (config.sellerPunctuations match {
      case _ if !config.punctuatesSellers => Nil
      case SellerPunctuations.Point => Seq("seller")
      case _ => Seq("seller<=")
    }) ++ (if (config.timePunctuations) Seq("dateTime<=") else Nil)
    if (schemes.isEmpty) base else base + ("punctuated.schemes" -> schemes.mkString("; "))
  }

  private def s(v: String): UTF8String = UTF8String.fromString(v)
  private def micros(ms: Long): Long = ms * 1000L

  /** The row's values, and the marker column `false` when the table carries punctuations (one array, no copy). */
  private def row(punctuations: Boolean, values: Any*): InternalRow = {
    val n = values.length
    val array = new Array[Any](if (punctuations) n + 1 else n)
    values.copyToArray(array)
    if (punctuations) array(n) = false
    new GenericInternalRow(array)
  }

  def personRow(p: Person, punctuations: Boolean): InternalRow =
    row(punctuations, p.id, s(p.name), s(p.emailAddress), s(p.creditCard), s(p.city), s(p.state),
      micros(p.dateTime), s(p.extra))

  def auctionRow(a: Auction, punctuations: Boolean): InternalRow =
    row(punctuations, a.id, s(a.itemName), s(a.description), a.initialBid, a.reserve,
      micros(a.dateTime), micros(a.expires), a.seller, a.category, s(a.extra))

  def bidRow(b: Bid, punctuations: Boolean): InternalRow =
    row(punctuations, b.auction, b.bidder, b.price, s(b.channel), s(b.url), micros(b.dateTime),
      s(b.extra))

  /**
   * "No more auctions with seller <= `sellerId`" (scheme `seller<=`) or "... with seller =
   * `sellerId`" (scheme `seller`): `seller` and the marker set, every other column NULL.
   */
  def sellerPunctuationRow(sellerId: Long): InternalRow =
    new GenericInternalRow(Array[Any](null, null, null, null, null, null, null, sellerId, null, null, true))

  /**
   * "No more rows with dateTime <= `micros`" (scheme `dateTime<=`): `dateTime` and the marker
   * set, every other column NULL.
   */
  def timePunctuationRow(table: NexmarkTableKind, micros: Long): InternalRow = {
    val columns = schema(NexmarkConfig(table, punctuations = true)).fieldNames
    val values = Array.fill[Any](columns.length)(null)
    values(columns.indexOf("dateTime")) = micros
    values(columns.length - 1) = true
    new GenericInternalRow(values)
  }

  /** "No more bids for auction `auctionId`". */
  def bidPunctuationRow(auctionId: Long): InternalRow =
    new GenericInternalRow(Array[Any](auctionId, null, null, null, null, null, null, true))
}
