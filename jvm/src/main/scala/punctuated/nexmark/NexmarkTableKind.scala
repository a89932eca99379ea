package punctuated.nexmark

import java.util.Locale

/** The three NEXMark streams a `nexmark` source can read (option `table`). */
sealed abstract class NexmarkTableKind(val name: String)

object NexmarkTableKind {
  case object Person extends NexmarkTableKind("person")
  case object Auction extends NexmarkTableKind("auction")
  case object Bid extends NexmarkTableKind("bid")

  val all: Seq[NexmarkTableKind] = Seq(Person, Auction, Bid)

  def parse(text: String): NexmarkTableKind =
    all.find(_.name == text.trim.toLowerCase(Locale.ROOT)).getOrElse(
      throw new IllegalArgumentException(
        s"nexmark: option table = '$text' is not one of ${all.map(_.name).mkString(", ")}"))
}
