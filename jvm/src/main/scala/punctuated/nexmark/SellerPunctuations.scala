package punctuated.nexmark

import java.util.Locale

/**
 * How the auction stream says that a person can be no seller any more (option
 * `sellerPunctuations`, with `punctuations=true`). A seller is one of the last
 * `numActivePeople` people or one not created yet, so once person `p` is created no later
 * auction names a person older than `p - numActivePeople + 1`. Both variants carry that
 * knowledge; they differ in the scheme it is written in:
 *
 *  - [[SellerPunctuations.Range]] (`true` or `range`): scheme `seller<=`; at every
 *    10th new person `p`, "no more auctions with seller <= p - 1000";
 *  - [[SellerPunctuations.Point]] (`point`): scheme `seller` (constants only, the schemes a
 *    multi-way join purges by); at every new person `p`, "no more auctions with seller =
 *    p - 1000", so every person is closed exactly once, 1000 people after its creation.
 *
 * {{{
 *   spark.readStream.format("nexmark").option("table", "auction")
 *     .option("punctuations", "true").option("sellerPunctuations", "point").load()
 * }}}
 *
 * @param name the option's value as the checkpoint's offsets record it (`false`, `true`
 *             for the range variant, as recorded before the point variant existed, `point`)
 */
sealed abstract class SellerPunctuations(val name: String)

object SellerPunctuations {
  case object Off extends SellerPunctuations("false")
  case object Range extends SellerPunctuations("true")
  case object Point extends SellerPunctuations("point")

  def parse(text: String): SellerPunctuations = text.trim.toLowerCase(Locale.ROOT) match {
    case "false" => Off
    case "true" | "range" => Range
    case "point" => Point
    case _ => throw new IllegalArgumentException(
      s"nexmark: option sellerPunctuations = '$text' is not one of false, true (= range), range, point")
  }
}
