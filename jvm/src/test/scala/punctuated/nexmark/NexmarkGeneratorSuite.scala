package punctuated.nexmark

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.scalatest.funsuite.AnyFunSuite

/**
 * The generator without Spark, over many rates and seeds: partitions split anywhere give the
 * rows of one partition, and the bid stream's punctuations are true.
 */
class NexmarkGeneratorSuite extends AnyFunSuite {

  private def rows(config: NexmarkConfig, start: Long, end: Long): Seq[InternalRow] = {
    val reader = new NexmarkPartitionReader(NexmarkInputPartition(config, start, end))
    val out = ArrayBuffer.empty[InternalRow]
    while (reader.next()) out += reader.get().copy()
    out.toSeq
  }

  private val rates = Seq(1L, 7L, 1000L, 10000L, 333333L, 5000000L)

  test("firstEventAfter is the first event whose time is later") {
    for (eps <- rates; base <- Seq(0L, 123456L)) {
      val clock = EventClock(base, eps)
      for (t <- Seq(base - 5, base, base + 1, base + 999, base + 1000, base + 31337)) {
        val n = clock.firstEventAfter(t)
        assert(clock.timestamp(n) > t && (n == 0 || clock.timestamp(n - 1) <= t), s"eps $eps t $t")
      }
    }
  }

  test("rows do not depend on where a range of events is split") {
    val random = new scala.util.Random(42)
    for (eps <- rates; table <- NexmarkTableKind.all; seed <- Seq(0L, 17L)) {
      val config = NexmarkConfig(table, eventsPerSecond = eps, seed = seed, punctuations = true)
      val total = 6000L
      val whole = rows(config, 0, total)
      val cuts = (0L +: Seq.fill(5)(random.nextInt(total.toInt).toLong) :+ total).distinct.sorted
      val pieces = cuts.zip(cuts.tail).flatMap { case (s, e) => rows(config, s, e) }
      assert(pieces == whole, s"$table eps $eps seed $seed cuts $cuts")
    }
  }

  test("bids only on open auctions; each expired auction punctuated once, after its bids") {
    for (eps <- rates; seed <- Seq(0L, 3L)) {
      val total = 30000L
      val config = NexmarkConfig(NexmarkTableKind.Bid, eventsPerSecond = eps, seed = seed,
        punctuations = true)
      val clock = EventClock(0L, eps)
      val auctions = rows(config.copy(table = NexmarkTableKind.Auction), 0, total)
        .map(r => r.getLong(0) -> (r.getLong(5) / 1000L, r.getLong(6) / 1000L)).toMap
      val closed = scala.collection.mutable.Set.empty[Long]
      var bids = 0
      rows(config, 0, total).foreach { r =>
        val auction = r.getLong(0)
        if (r.getBoolean(7)) {
          assert(closed.add(auction), s"auction $auction punctuated twice")
        } else {
          bids += 1
          assert(!closed.contains(auction), s"bid on $auction after its punctuation (eps $eps)")
          val (created, expires) = auctions(auction)
          val t = r.getLong(5) / 1000L
          assert(created <= t && t <= expires)
        }
      }
      assert(bids == total / 50 * 46, s"eps $eps: some bid events had no open auction")
      val expired = auctions.collect { case (id, (_, x)) if x < clock.timestamp(total - 1) => id }
      assert(closed.toSet == expired.toSet, s"eps $eps seed $seed")
    }
  }

  test("seller punctuations are true: no auction names a seller after its punctuation; point = range as constants") {
    for (eps <- Seq(7L, 10000L); seed <- Seq(0L, 5L)) {
      val total = 150000L // 3000 people: people 1000 .. 2999 are closed
      val base = NexmarkConfig(NexmarkTableKind.Auction, eventsPerSecond = eps, seed = seed,
        punctuations = true)
      def run(kind: SellerPunctuations) = {
        val config = base.copy(sellerPunctuations = kind)
        // split anywhere: the same rows
        val whole = rows(config, 0, total)
        assert(whole == Seq((0L, 40000L), (40000L, 90001L), (90001L, total)).flatMap {
          case (s, e) => rows(config, s, e)
        }, s"$kind eps $eps seed $seed")
        whole
      }
      val point = run(SellerPunctuations.Point)
      val range = run(SellerPunctuations.Range)
      // the data rows are those of the stream without seller punctuations
      val plain = rows(base, 0, total)
      assert(point.filterNot(_.getBoolean(10)) == plain && range.filterNot(_.getBoolean(10)) == plain)
      val closed = scala.collection.mutable.Set.empty[Long]
      val pointIds = scala.collection.mutable.ArrayBuffer.empty[Long]
      point.foreach { r =>
        if (r.getBoolean(10)) {
          assert((0 to 9).filter(_ != 7).forall(r.isNullAt), s"punctuation with data: $r")
          assert(closed.add(r.getLong(7)), s"seller ${r.getLong(7)} punctuated twice")
          pointIds += r.getLong(7)
        } else {
          assert(!closed.contains(r.getLong(7)), s"auction $r names a closed seller")
        }
      }
      // every person is closed once, 1000 people after its creation, in creation order
      assert(pointIds == (1000L until 1000L + total / 50 - 1000L))
      // the range variant closes no person earlier than the point variant: each punctuation
      // with the number of data rows before it, the same in both streams
      def closings(rs: Seq[InternalRow]): Seq[(Int, Long)] = {
        var data = 0
        rs.flatMap { r =>
          if (r.getBoolean(10)) Some(data -> r.getLong(7)) else { data += 1; None }
        }
      }
      val pointAt = closings(point).map(_.swap).toMap
      var closedUpTo = Long.MinValue
      closings(range).foreach { case (at, upTo) =>
        assert(upTo > closedUpTo)
        closedUpTo = upTo
        assert((1000L to upTo).forall(id => pointAt(id) <= at), s"range <= $upTo before the points")
      }
      assert(closedUpTo >= 1000L + total / 50 - 1000L - 10L)
    }
  }
}
