package punctuated.join

import org.apache.spark.sql.execution.streaming.runtime.MemoryStream

import punctuated.declaration.Declaration._
import punctuated.join.JoinTestData._
import punctuated.spark.PunctuatedStreamTest

/** The auction join, scripted batch by batch. */
class PunctuatedJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def auctionJoin(joinType: String = "inner") = {
    val auctions = MemoryStream[Auction]
    val bids = MemoryStream[Bid]
    val a = declare(auctions.toDF(), "auctions", Unique -> "id", Marker -> "is_punct")
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    val joined = a.join(b, a("id") === b("auction"), joinType)
      .select(a("id"), b("bidder"), b("price"))
    (auctions, bids, joined)
  }

  test("inner join: results as the batch join, state forgotten when both inputs close a key") {
    val (auctions, bids, joined) = auctionJoin()
    assert(joined.queryExecution.analyzed.toString.contains("punctuation_columns"))
    testStream(joined)(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0)),
      CheckNewAnswer((1L, 100L, 5.0)),
      AddData(bids, bid(1, 101, 7.5), bid(2, 100, 3.0), closeBids(1)),
      CheckNewAnswer((1L, 101L, 7.5), (2L, 100L, 3.0)),
      // auction 1: purged (bids closed it), its punctuations released (both inputs closed 1);
      // auction 2 stored, its unique-key punctuation held; no bid is stored (auctions are unique)
      AssertPunctuatedState(rows = 1, punctuations = 1),
      AddData(bids, bid(2, 102, 4.0), closeBids(2)),
      CheckNewAnswer((2L, 102L, 4.0)),
      AssertPunctuatedState(rows = 0, punctuations = 0)
    )
  }
}
