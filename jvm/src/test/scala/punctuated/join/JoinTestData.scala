package punctuated.join

/** Rows of the auction example (Li et al. 2006, §1; Tucker et al. 2003, Example 2); NULL = None. */
case class Auction(id: Option[Long], seller: Option[Long], is_punct: Boolean = false)
case class Bid(auction: Option[Long], bidder: Option[Long], price: Option[Double], is_punct: Boolean = false)

object JoinTestData {
  def auction(id: Long, seller: Long): Auction = Auction(Some(id), Some(seller))
  def bid(auction: Long, bidder: Long, price: Double): Bid = Bid(Some(auction), Some(bidder), Some(price))
  /** "No more bids for auction a". */
  def closeBids(auction: Long): Bid = Bid(Some(auction), None, None, is_punct = true)
  /** "No more auctions with id a" (explicit, besides the unique key). */
  def closeAuction(id: Long): Auction = Auction(Some(id), None, is_punct = true)
}
