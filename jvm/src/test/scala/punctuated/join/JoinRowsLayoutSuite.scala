package punctuated.join

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.spark.sql.functions.lit
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.checkpoint.{CheckpointDeclarations, StateLayouts}
import punctuated.declaration.Declaration._
import punctuated.join.JoinTestData._
import punctuated.errors.{PunctuatedAnalysisException, PunctuatedErrors}
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * The layout of a join's stored rows (a key's n rows under slots 0 .. n-1, see
 * [[JoinInputState]]), on the HDFS-backed state store; [[JoinRowsLayoutRocksDBSuite]] runs
 * the same on RocksDB: many rows per key found again after a restart, the holes a left semi
 * join leaves filled, a checkpoint of the former layout refused, and the memory per stored
 * row at most Spark's own join's for the same rows.
 */
class JoinRowsLayoutSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def newCheckpoint(): String = Files.createTempDirectory("punctuated-layout").toFile.getCanonicalPath


  /** Auctions and bids, both declaring a scheme on the join key (ids are not unique here). */
  private def auctionsJoinBids(joinType: String, sellerBelowBidder: Boolean = false) = {
    val auctions = MemoryStream[Auction]
    val bids = MemoryStream[Bid]
    val a = declare(auctions.toDF(), "auctions", Schemes -> "id", Marker -> "is_punct")
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    val on = a("id") === b("auction") && (if (sellerBelowBidder) a("seller") < b("bidder") else lit(true))
    (auctions, bids, a.join(b, on, joinType).select(a("id"), if (joinType == "left_semi") a("seller") else b("bidder")))
  }

  /** Every file of the operator's stores, with its length. */
  private def stateFiles(checkpoint: String): Map[String, Long] = {
    val dir = new File(checkpoint, "state/0")
    def walk(f: File): Seq[File] = if (f.isDirectory) f.listFiles().toSeq.flatMap(walk) else Seq(f)
    dir.listFiles().toSeq.filter(_.getName.forall(_.isDigit)).flatMap(walk)
      .map(f => dir.toPath.relativize(f.toPath).toString -> f.length()).toMap
  }

  test("a key's many rows are all found again after a restart, and more are appended after them") {
    val (auctions, bids, joined) = auctionsJoinBids("inner")
    val checkpoint = newCheckpoint()
    testStream(joined)(
      StartStream(checkpointLocation = checkpoint),
      // 37 rows under one key (not a power of two: found by doubling, then a binary search)
      AddData(bids, (1 to 37).map(i => bid(1, i, i.toDouble)) :+ bid(2, 1, 1.0): _*),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 38, punctuations = 0),
      StopStream,
      StartStream(checkpointLocation = checkpoint),
      AddData(bids, bid(1, 38, 38.0), bid(1, 39, 39.0)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 40, punctuations = 0),
      StopStream,
      StartStream(checkpointLocation = checkpoint),
      AddData(auctions, auction(1, 10)),
      CheckNewAnswer((1L, 1L), (2 to 39).map(i => (1L, i.toLong)): _*),
      AddData(bids, closeBids(1)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 40, punctuations = 1),   // auction 1 purged, bids' punctuation held
      AssertMetric("numStateRowsScanned", 1),
      AddData(auctions, closeAuction(1)),
      CheckNewAnswer(),
      AssertMetric("numRowsPurged", 39),
      AssertMetric("numStateRowsScanned", 39),              // each of key 1's bids read once
      AssertPunctuatedState(rows = 1, punctuations = 0))
  }

  test("a left semi join's holes are filled at commit: the remaining rows found after a restart") {
    // a bid matches the stored auctions of its id whose seller is below its bidder
    val (auctions, bids, semi) = auctionsJoinBids("left_semi", sellerBelowBidder = true)
    val checkpoint = newCheckpoint()
    testStream(semi)(
      StartStream(checkpointLocation = checkpoint),
      AddData(auctions, (10 to 14).map(s => auction(1, s)): _*),   // sellers 10 .. 14 under id 1
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 5, punctuations = 0),
      AddData(bids, bid(1, 12, 1.0)),                 // sellers 10, 11 emitted and removed
      CheckNewAnswer((1L, 10L), (1L, 11L)),
      AssertPunctuatedState(rows = 4, punctuations = 0),    // 3 auctions, the bid
      StopStream,
      StartStream(checkpointLocation = checkpoint),
      AddData(auctions, auction(1, 20), auction(1, 21)),   // above the stored bidder: stored
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 6, punctuations = 0),
      StopStream,
      StartStream(checkpointLocation = checkpoint),
      AddData(bids, bid(1, 14, 1.0)),                 // sellers 12, 13
      CheckNewAnswer((1L, 12L), (1L, 13L)),
      AssertPunctuatedState(rows = 5, punctuations = 0),
      StopStream,
      StartStream(checkpointLocation = checkpoint),
      AddData(bids, bid(1, 100, 1.0)),                // every auction left: none lost or repeated
      CheckNewAnswer((1L, 14L), (1L, 20L), (1L, 21L)),
      AssertPunctuatedState(rows = 3, punctuations = 0))  // the three bids
  }

  test("a checkpoint of the former rows layout is refused before the state is touched") {
    val (auctions, bids, joined) = auctionsJoinBids("inner")
    val checkpoint = newCheckpoint()
    testStream(joined)(
      StartStream(checkpointLocation = checkpoint),
      AddData(auctions, auction(1, 10)),
      CheckNewAnswer(),
      StopStream)
    val record = new File(checkpoint, s"state/0/${CheckpointDeclarations.DirName}/${CheckpointDeclarations.FileName}")
    val json = new String(Files.readAllBytes(record.toPath), UTF_8)
    val current = s""""layoutVersion":${StateLayouts.Join}"""
    assert(json.contains(current), json)
    Files.write(record.toPath, json.replace(current, s""""layoutVersion":${StateLayouts.Join - 1}""").getBytes(UTF_8))
    val before = stateFiles(checkpoint)
    testStream(joined)(
      StartStream(checkpointLocation = checkpoint),
      AddData(bids, bid(1, 100, 5.0)),
      ExpectFailure[PunctuatedAnalysisException] { e =>
        val a = e.asInstanceOf[PunctuatedAnalysisException]
        assert(a.getCondition == PunctuatedErrors.IncompatibleCheckpoint, a.getMessage)
        assert(a.getMessage.contains(s"state layout version ${StateLayouts.Join - 1}"), a.getMessage)
        assert(a.getMessage.contains(s"reads layout version ${StateLayouts.Join}"), a.getMessage)
      })
    assert(stateFiles(checkpoint) == before, "the refused run wrote state")
  }

  test("memory per stored row at most Spark's own join's for the same rows (HDFS-backed store)") {
    assume(!spark.conf.get(SQLConf.STATE_STORE_PROVIDER_CLASS.key).contains("RocksDB"))
    def memory(declared: Boolean): (Long, Long) = {
      val auctions = MemoryStream[Auction]
      val bids = MemoryStream[Bid]
      val (a, b) =
        if (declared) (declare(auctions.toDF(), "auctions", Schemes -> "id", Marker -> "is_punct"),
          declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct"))
        else (auctions.toDF(), bids.toDF())
      var figures = (0L, 0L)
      testStream(a.join(b, a("id") === b("auction")).select(a("id"), b("bidder")))(
        // the same rows for both: 3000 auctions, 3000 bids (1500 of them on stored auctions)
        AddData(auctions, (1 to 3000).map(i => auction(i, i % 97)): _*),
        AddData(bids, (1501 to 4500).map(i => bid(i, i % 89, 1.0)): _*),
        CheckAnswer((1501 to 3000).map(i => (i.toLong, (i % 89).toLong)): _*),
        AssertOnQuery { q =>
          val s = settledProgress(q).stateOperators.head
          figures = (s.numRowsTotal, s.memoryUsedBytes)
          true
        })
      figures
    }
    val (sparkRows, sparkBytes) = memory(declared = false)
    val (ourRows, ourBytes) = memory(declared = true)
    assert(ourRows == 6000, ourRows)
    assert(ourBytes.toDouble / ourRows <= sparkBytes.toDouble / 6000,
      s"ours $ourBytes bytes for $ourRows rows, Spark's own join $sparkBytes bytes (numRowsTotal $sparkRows)")
  }
}

class JoinRowsLayoutRocksDBSuite extends JoinRowsLayoutSuite with OnRocksDB
