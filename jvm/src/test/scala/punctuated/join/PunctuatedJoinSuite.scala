package punctuated.join

import punctuated.input.PunctuationReplicatingExchangeExec

import org.apache.spark.SparkException
import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import punctuated.compat.StreamingSymmetricHashJoinExec
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.JoinTestData._
import punctuated.spark.{NotOnRocksDB, OnRocksDB}

/**
 * The auction join (auctions `unique id`, bids `schemes auction`), scripted batch by batch,
 * on the HDFS-backed state store; [[PunctuatedJoinRocksDBSuite]] runs the same on RocksDB.
 */
class PunctuatedJoinSuite extends DayRangeJoin {
  import testImplicits._

  private def auctionJoin(joinType: String = "inner", bidsFilter: DataFrame => DataFrame = identity) = {
    val auctions = MemoryStream[Auction]
    val bids = MemoryStream[Bid]
    val a = declare(auctions.toDF(), "auctions", Unique -> "id", Marker -> "is_punct")
    val b = bidsFilter(declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct"))
    val joined = a.join(b, a("id") === b("auction"), joinType)
    val projected = joinType match {
      case "left_semi" | "left_anti" => joined.select(a("id"), a("seller"))
      case _ => joined.select(a("id"), b("bidder"), b("price"))
    }
    (auctions, bids, projected)
  }

  private def ExpectPunctuatedPlan = AssertOnQuery("planned with the punctuated join") { q =>
    q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }.size == 1
  }


  test("inner join: results as the batch join, state forgotten when both inputs close a key") {
    val (auctions, bids, joined) = auctionJoin()
    testStream(joined)(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0)),
      CheckNewAnswer((1L, 100L, 5.0)),
      ExpectPunctuatedPlan,
      AddData(bids, bid(1, 101, 7.5), bid(2, 100, 3.0), closeBids(1)),
      CheckNewAnswer((1L, 101L, 7.5), (2L, 100L, 3.0)),
      // auction 1 purged (bids closed it) and its punctuations released (both inputs closed 1);
      // auction 2 stored with its unique-key punctuation; no bid stored (auctions are unique)
      AssertPunctuatedState(rows = 1, punctuations = 1),
      AssertCounted("numPunctuationsReceived", 1),
      AssertMetric("numRowsPurged", 1),
      AddData(bids, bid(2, 102, 4.0), closeBids(2)),
      CheckNewAnswer((2L, 102L, 4.0)),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("bids before their auction are stored, joined when it comes, then purged") {
    val (auctions, bids, joined) = auctionJoin()
    testStream(joined)(
      AddData(bids, bid(3, 100, 1.0), bid(3, 101, 2.0)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 2, punctuations = 0),
      AddData(auctions, auction(3, 12)),
      CheckNewAnswer((3L, 100L, 1.0), (3L, 101L, 2.0)),
      // the auction's unique key closes 3 on the auctions side: the stored bids go
      AssertPunctuatedState(rows = 1, punctuations = 1))
  }

  test("the state store provider's own metrics are reported, summed over the join's stores") {
    val (auctions, bids, joined) = auctionJoin()
    val hdfs = spark.conf.get(SQLConf.STATE_STORE_PROVIDER_CLASS.key).contains("HDFSBackedStateStoreProvider")
    testStream(joined)(
      AddData(bids, bid(3, 100, 1.0), bid(3, 101, 2.0), bid(4, 102, 3.0)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 3, punctuations = 0),
      AssertOnQuery("provider metrics of the stores") { q =>
        val p = punctuatedProgress(q)
        // HDFS-backed: the bytes of the stores' current versions; RocksDB: one put per stored
        // row at least (both 0 if the stores' metrics were not reported)
        val (name, least) = if (hdfs) ("stateOnCurrentVersionSizeBytes", 1L) else ("rocksdbPutCount", 3L)
        val got = p.customMetrics.get(name)
        assert(got != null && got >= least, s"$name = $got, expected >= $least: ${p.json}")
        assert(p.memoryUsedBytes > 0, p.json)
        true
      })
  }

  test("a punctuation takes effect at the end of its batch, never on rows of the same batch") {
    val (auctions, bids, joined) = auctionJoin()
    testStream(joined)(
      AddData(auctions, auction(1, 10)),
      CheckNewAnswer(),
      // the punctuation comes before the bid in the same batch: the bid still counts
      AddData(bids, closeBids(1), bid(1, 100, 5.0)),
      CheckNewAnswer((1L, 100L, 5.0)),
      AssertCounted("numLateRowsDropped", 0))
  }

  test("late rows are dropped and counted, or fail the query") {
    val (auctions, bids, joined) = auctionJoin()
    testStream(joined)(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, closeBids(1)),
      CheckNewAnswer(),
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 6.0)),  // bids closed 1 earlier: late
      CheckNewAnswer((2L, 100L, 6.0)),
      // auction 1 closed on both sides: its punctuations are released, but remembered
      AssertCounted("numLateRowsDropped", 1))
    val (auctions2, bids2, joined2) = auctionJoin()
    testStream(joined2)(
      AddData(bids2, closeBids(7)),
      CheckNewAnswer(),
      AddData(bids2, bid(7, 100, 5.0)),         // still held (auctions never closed 7): late
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      AssertPunctuatedState(rows = 0, punctuations = 1))
    withSQLConf(PunctuatedConf.LateRows -> "fail") {
      val (_, bids3, joined3) = auctionJoin()
      testStream(joined3)(
        AddData(bids3, closeBids(7)),
        CheckNewAnswer(),
        AddData(bids3, bid(7, 100, 5.0)),
        ExpectFailure[SparkException] { e =>
          assert(e.getMessage.contains("PUNCTUATED_LATE_ROW") && e.getMessage.contains("auction=7"),
            e.getMessage)
        })
    }
  }

  test("late rows under the defaults: dropped after both inputs released the key, never stored") {
    val (auctions, bids, joined) = auctionJoin()
    testStream(joined)(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0), closeBids(1)),
      CheckNewAnswer((1L, 100L, 5.0)),
      // key 1 closed by both inputs: auction 1 purged, both punctuations released
      AssertPunctuatedState(rows = 1, punctuations = 1),
      StopStream,
      StartStream(),
      AddData(bids, bid(1, 101, 7.0)),          // late: bids closed 1
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      AssertPunctuatedState(rows = 1, punctuations = 1),   // not stored
      AddData(auctions, auction(1, 12)),        // late: auctions' unique key 1 seen before
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 2),
      AssertPunctuatedState(rows = 1, punctuations = 1),
      AddData(bids, closeBids(1)),              // a repeated punctuation: nothing is held
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 1, punctuations = 1),
      AssertOnQuery("both inputs remember key 1 (and auctions key 2)") { q =>
        punctuatedProgress(q).customMetrics.get("numClosedValuesRemembered") >= 2L
      })
    withSQLConf(PunctuatedConf.LateRows -> "fail") {
      val (auctions2, bids2, joined2) = auctionJoin()
      testStream(joined2)(
        AddData(auctions2, auction(1, 10)),
        AddData(bids2, bid(1, 100, 5.0), closeBids(1)),
        CheckNewAnswer((1L, 100L, 5.0)),
        AssertPunctuatedState(rows = 0, punctuations = 0),
        StopStream,
        StartStream(),
        AddData(bids2, bid(1, 101, 7.0)),
        ExpectFailure[SparkException] { e =>
          assert(e.getMessage.contains("PUNCTUATED_LATE_ROW") && e.getMessage.contains("auction=1"),
            e.getMessage)
        })
    }
  }

  test("closed join keys are remembered compactly: sequential ids are one interval per partition and input") {
    val (auctions, bids, joined) = auctionJoin()
    val ids = 1L to 60L
    testStream(joined)(
      AddData(auctions, ids.map(id => auction(id, 10)): _*),
      AddData(bids, ids.flatMap(id => Seq(bid(id, 100, 1.0), closeBids(id))): _*),
      CheckNewAnswer(ids.map(id => Row(id, 100L, 1.0)): _*),
      AssertPunctuatedState(rows = 0, punctuations = 0),
      AssertMetric("numClosedValuesRemembered", 4),      // 2 inputs x 2 partitions
      AddData(bids, ids.map(id => bid(id, 101, 2.0)): _*),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 60),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("invalid punctuations fail the query (default) or are dropped and counted", NotOnRocksDB) {
    val invalid = Bid(Some(1), Some(100), None, is_punct = true)    // two attributes set
    val (_, bids, joined) = auctionJoin()
    testStream(joined)(
      AddData(bids, invalid),
      ExpectFailure[SparkException] { e =>
        assert(e.getMessage.contains("PUNCTUATED_INVALID_PUNCTUATION") &&
          e.getMessage.contains("bids") && e.getMessage.contains("auction"), e.getMessage)
      })
    withSQLConf(PunctuatedConf.InvalidPunctuations -> "drop") {
      val (auctions2, bids2, joined2) = auctionJoin()
      testStream(joined2)(
        AddData(auctions2, auction(1, 10)),
        AddData(bids2, invalid, bid(1, 100, 5.0)),
        CheckNewAnswer((1L, 100L, 5.0)),
        AssertCounted("numInvalidPunctuationsDropped", 1))
    }
  }

  test("left outer join emits unmatched rows when the other input closes their key, no watermark") {
    val (auctions, bids, joined) = auctionJoin("left_outer")
    testStream(joined)(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0)),
      CheckNewAnswer((1L, 100L, 5.0)),
      AddData(bids, closeBids(1), closeBids(2)),
      CheckNewAnswer(Row(2L, null, null)),      // auction 2 never had a bid
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("right and full outer joins") {
    val (auctions, bids, right) = auctionJoin("right_outer")
    testStream(right)(
      AddData(bids, bid(5, 100, 5.0)),
      CheckNewAnswer(),
      AddData(auctions, closeAuction(5)),     // no auction 5 will come: the bid is unmatched
      CheckNewAnswer(Row(null, 100L, 5.0)),
      AssertPunctuatedState(rows = 0, punctuations = 1))
    val (auctions2, bids2, full) = auctionJoin("full_outer")
    testStream(full)(
      AddData(auctions2, auction(1, 10)),
      AddData(bids2, bid(2, 100, 5.0)),
      CheckNewAnswer(),
      AddData(bids2, closeBids(1)),
      AddData(auctions2, closeAuction(2)),
      CheckNewAnswer(Row(1L, null, null), Row(null, 100L, 5.0)))
  }

  test("left semi join emits each auction once, at its first bid") {
    val (auctions, bids, semi) = auctionJoin("left_semi")
    testStream(semi)(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0), bid(1, 101, 6.0)),
      CheckNewAnswer((1L, 10L)),
      AddData(bids, bid(1, 102, 7.0), closeBids(2)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 0, punctuations = 1))
  }

  test("left anti join emits an auction without bids once the bids close it") {
    val (auctions, bids, anti) = auctionJoin("left_anti")
    testStream(anti)(
      AddData(auctions, auction(1, 10), auction(2, 11), auction(3, 12)),
      AddData(bids, bid(1, 100, 5.0)),
      CheckNewAnswer(),
      AddData(bids, closeBids(1), closeBids(2)),
      CheckNewAnswer((2L, 11L)),
      AssertPunctuatedState(rows = 1, punctuations = 1))
  }

  test("output punctuations, with emitPunctuations=true: keys both inputs have closed") {
    withSQLConf(PunctuatedConf.EmitPunctuations -> "true") {
      val auctions = MemoryStream[Auction]
      val bids = MemoryStream[Bid]
      val a = declare(auctions.toDF(), "auctions", Unique -> "id", Marker -> "is_punct")
      val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
      val joined = a.join(b, a("id") === b("auction"))
        .select(a("id"), a("is_punct"), b("auction"), b("bidder"), b("is_punct"))
      testStream(joined)(
        AddData(auctions, auction(1, 10), auction(2, 11)),
        AddData(bids, bid(1, 100, 5.0)),
        CheckNewAnswer(Row(1L, false, 1L, 100L, false)),
        AddData(bids, closeBids(1)),
        // auction 1 closed by both inputs: one punctuation per input, wildcards elsewhere
        CheckNewAnswer(Row(1L, true, null, null, false), Row(null, false, 1L, null, true)))
      val (auctions2, bids2, noMarkers) = auctionJoin()
      testStream(noMarkers)(   // results without a marker column: no punctuation rows
        AddData(auctions2, auction(1, 10)),
        AddData(bids2, bid(1, 100, 5.0), closeBids(1)),
        CheckNewAnswer((1L, 100L, 5.0)))
    }
    val (auctions, bids, joined) = auctionJoin()
    testStream(joined)(     // the default: no punctuation in the results
      AddData(auctions, auction(1, 10)),
      AddData(bids, bid(1, 100, 5.0), closeBids(1)),
      CheckNewAnswer((1L, 100L, 5.0)))
  }

  test("other operators between source and join drop punctuations; the input counts as undeclared", NotOnRocksDB) {
    val (auctions, bids, joined) = auctionJoin(bidsFilter = _.dropDuplicates("auction", "bidder"))
    val e = intercept[AnalysisException](joined.writeStream.format("memory").queryName("dedup").start())
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY" && e.getMessage.contains("input auctions"), e.getMessage)
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(joined)(
        AddData(auctions, auction(1, 10)),
        AddData(bids, bid(1, 100, 5.0), closeBids(1)),
        CheckNewAnswer((1L, 100L, 5.0)),        // the punctuation row is no data row
        AssertPunctuatedState(rows = 1, punctuations = 1))  // nothing purges auction 1
    }
  }

  test("filters between source and join let punctuations through", NotOnRocksDB) {
    val (auctions, bids, joined) = auctionJoin(bidsFilter = _.where(col("price") > 4.0))
    testStream(joined)(
      AddData(auctions, auction(1, 10)),
      AddData(bids, bid(1, 100, 5.0), bid(1, 101, 3.0)),
      CheckNewAnswer((1L, 100L, 5.0)),
      AddData(bids, closeBids(1)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("stop and restart from the checkpoint in the middle of a key's life: exactly once") {
    val (auctions, bids, joined) = auctionJoin("left_outer")
    testStream(joined)(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0)),
      CheckNewAnswer((1L, 100L, 5.0)),
      StopStream,
      StartStream(),
      AddData(bids, bid(1, 101, 6.0), bid(2, 102, 7.0)),
      CheckNewAnswer((1L, 101L, 6.0), (2L, 102L, 7.0)),
      AssertPunctuatedState(rows = 2, punctuations = 2),
      StopStream,
      AddData(bids, closeBids(1)),
      StartStream(),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 1, punctuations = 1),
      StopStream,
      StartStream(),
      AddData(auctions, auction(3, 12)),
      AddData(bids, bid(1, 103, 9.0), closeBids(3)),   // bid on closed 1: late (remembered)
      CheckNewAnswer(Row(3L, null, null)),
      AssertCounted("numLateRowsDropped", 1),
      AssertPunctuatedState(rows = 1, punctuations = 1))
  }

  test("range punctuations purge every key up to their bound") {
    val (readings, days, joined) = dayRangeJoin()
    testStream(joined)(
      AddData(readings, (Some(1), Some(7L), false), (Some(2), Some(7L), false), (Some(5), Some(8L), false)),
      AddData(days, (Some(1), Some("mon"), false)),
      CheckNewAnswer((1, 7L, "mon")),
      AssertPunctuatedState(rows = 4, punctuations = 0),
      // each input's stored days, indexed for the other input's "day<=": readings 1, 2, 5, day 1
      AssertMetric("numRangeIndexEntries", 4),
      AddData(days, (Some(3), None, true)),            // no more days <= 3
      CheckNewAnswer(),
      // readings 1, 2 purged; 5 and day 1 stay; "days <= 3" held by both partitions
      AssertPunctuatedState(rows = 2, punctuations = 2),
      AssertMetric("numStateRowsScanned", 2),            // reading 5 not even read
      AssertMetric("numRangeIndexEntries", 2),           // reading 5, day 1
      // a reading for day 2 (days closed <= 3: joined with nothing stored, not stored), and
      // "no more readings <= 4": day 1 goes, and so does the days' "<= 3" (covered by it)
      AddData(readings, (Some(2), Some(9L), false), (Some(4), None, true)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 1, punctuations = 2),  // "readings <= 4", in 2 partitions
      AssertMetric("numRangeIndexEntries", 1))
  }

  test("late rows under ranges: after both inputs closed <= 3 and released it, rows <= 3 are late") {
    val (readings, days, joined) = dayRangeJoin()
    testStream(joined)(
      AddData(readings, (Some(1), Some(7L), false)),
      AddData(days, (Some(1), Some("mon"), false)),
      CheckNewAnswer((1, 7L, "mon")),
      StopStream,
      AddData(readings, (Some(2), None, true), (Some(3), None, true)),
      AddData(days, (Some(3), None, true)),
      StartStream(),
      CheckNewAnswer(),
      // both inputs closed <= 3: the stored rows are purged, the punctuations released, and
      // each input's highest bound remembered (one entry each, kept by every partition)
      AssertPunctuatedState(rows = 0, punctuations = 0),
      StopStream,
      AddData(readings, (Some(2), Some(9L), false), (Some(4), Some(9L), false)),
      AddData(days, (Some(3), Some("wed"), false), (Some(4), Some("thu"), false)),
      StartStream(),
      CheckNewAnswer((4, 9L, "thu")),
      AssertCounted("numLateRowsDropped", 2),
      AssertPunctuatedState(rows = 2, punctuations = 0),    // day 4's reading and day: open
      AssertMetric("numClosedValuesRemembered", 4))          // 2 inputs x 2 partitions
  }

  test("range punctuations reach every partition through the shuffle itself, received once, held by all") {
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "4") {
      val (readings, days, joined) = dayRangeJoin()
      val twelveDays = (1 to 12).map(day => (Some(day), Some(day * 10L), false))
      testStream(joined)(
        AddData(readings, twelveDays: _*),                 // days 1..12 spread over 4 partitions
        CheckNewAnswer(),
        AssertOnQuery("both inputs come through the replicating exchange") { q =>
          val plan = q.lastExecution.executedPlan
          val joins = plan.collect { case j: PunctuatedSymmetricHashJoinExec => j }
          plan.collect { case e: PunctuationReplicatingExchangeExec => e }.size == 2 &&
            joins.size == 1 && joins.head.leftReplicated && joins.head.rightReplicated
        },
        AssertOnQuery("the rows are in several partitions") { q =>
          settledProgress(q).stateOperators.head.numRowsTotal == 12
        },
        AssertMetric("numRangeIndexEntries", 12),           // readings' days, for "days <= b"
        AddData(days, (Some(8), None, true)),              // no more days <= 8: every partition
        CheckNewAnswer(),
        AssertPunctuatedState(rows = 4, punctuations = 4),  // readings 1..8 purged everywhere;
        // the punctuation held by each of the 4 partitions (each copy is state, and counted)
        AssertCounted("numPunctuationsReceived", 1),         // one punctuation, not one per copy
        AssertMetric("numRowsPurged", 8),
        AssertMetric("numRangeIndexEntries", 4),
        StopStream,
        StartStream(),
        AddData(readings, (Some(5), Some(99L), false)),    // days closed 5: not stored
        AddData(days, (Some(10), Some("wed"), false)),
        CheckNewAnswer((10, 100L, "wed")),
        AssertPunctuatedState(rows = 5, punctuations = 4),
        AssertMetric("numRangeIndexEntries", 5),            // readings 9..12, day 10
        AddData(readings, (Some(12), None, true)),         // no more readings <= 12
        CheckNewAnswer(),
        // day 10 purged, readings 9..12 stay; the days' "<= 8" is released (both closed 8)
        AssertPunctuatedState(rows = 4, punctuations = 4),
        AssertMetric("numRangeIndexEntries", 4))
    }
  }

  test("range and prefix punctuations read only the stored rows they purge (range index)") {
    val readings = MemoryStream[(Option[Int], Option[Int], Option[Double], Boolean)]
    val calibrations = MemoryStream[(Option[Int], Option[Int], Option[Double], Boolean)]
    val r = declare(readings.toDF().toDF("sensor", "day", "value", "p"), "readings",
      Schemes -> "sensor, day<=; sensor", Marker -> "p")
    val c = declare(calibrations.toDF().toDF("sensor", "day", "factor", "p"), "calibrations",
      Schemes -> "sensor, day<=; sensor", Marker -> "p")
    val joined = r.join(c, r("sensor") === c("sensor") && r("day") === c("day"))
      .select(r("sensor"), r("day"), r("value"), c("factor"))
    def reading(sensor: Int, day: Int) = (Some(sensor), Some(day), Some(sensor * 100.0 + day), false)
    def upTo(sensor: Int, day: Int) = (Some(sensor), Some(day), None, true)   // sensor, day<=
    def allOf(sensor: Int) = (Some(sensor), None, None, true)                 // sensor
    val all = for (s <- 1 to 5; d <- 1 to 10) yield reading(s, d)   // 50 keys (sensor, day)
    testStream(joined)(
      AddData(readings, all: _*),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 50, punctuations = 0),
      // 50 keys, each listed once per scheme of the calibrations ("sensor, day<=" and "sensor")
      AssertMetric("numRangeIndexEntries", 100),
      AddData(calibrations, upTo(3, 4)),          // no more calibrations of sensor 3, days <= 4
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 46, punctuations = 2),   // held by both partitions
      AssertMetric("numRangeIndexEntries", 92),
      AssertMetric("numRowsPurged", 4),
      AssertMetric("numStateRowsScanned", 4),     // the 46 other rows are not read
      AddData(calibrations, allOf(2), (Some(1), Some(1), Some(2.0), false)),
      CheckNewAnswer((1, 1, 101.0, 2.0)),
      AssertPunctuatedState(rows = 37, punctuations = 4),   // the calibration (1, 1) is stored
      AssertMetric("numStateRowsScanned", 10),
      AssertMetric("numRangeIndexEntries", 2 * 36 + 2),     // 36 readings' keys, 1 calibration's
      StopStream,
      StartStream(),                              // the index is restored from the checkpoint
      MultiAddData(readings, reading(3, 6))(calibrations, upTo(3, 8)),   // a 2nd row under (3, 6)
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 33, punctuations = 4),   // (3, 5..8) purged: 5 rows
      AssertMetric("numRowsPurged", 5),
      AssertMetric("numStateRowsScanned", 5),
      AssertMetric("numRangeIndexEntries", 2 * 32 + 2),     // 4 keys gone (2 rows under (3, 6))
      // readings close the stored calibration (1, 1); calibrations close sensors 3 and 4
      MultiAddData(readings, upTo(1, 1))(calibrations, allOf(3), allOf(4)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 20, punctuations = 10),  // (3, 9..10) and sensor 4 purged
      AssertMetric("numStateRowsScanned", 13),
      AssertMetric("numRangeIndexEntries", 2 * 20))
  }

  test("range punctuations on a timestamp, with a string constant") {
    import java.sql.Timestamp
    val l = MemoryStream[(Option[String], Option[Timestamp], Option[Int], Boolean)]
    val r = MemoryStream[(Option[String], Option[Timestamp], Option[Int], Boolean)]
    val a = declare(l.toDF().toDF("sensor", "ts", "v", "p"), "a", Schemes -> "sensor, ts<=", Marker -> "p")
    val b = declare(r.toDF().toDF("sensor", "ts", "w", "p"), "b", Schemes -> "sensor, ts<=", Marker -> "p")
    val joined = a.join(b, a("sensor") === b("sensor") && a("ts") === b("ts")).select(a("sensor"), a("v"), b("w"))
    def at(minute: Int) = Some(Timestamp.valueOf(f"2026-01-01 10:$minute%02d:00"))
    def row(s: String, minute: Int, v: Int) = (Some(s), at(minute), Some(v), false)
    def upTo(s: String, minute: Int) = (Some(s), at(minute), None, true)
    testStream(joined)(
      AddData(l, row("x", 1, 1), row("x", 2, 2), row("x", 30, 3), row("y", 1, 4)),
      CheckNewAnswer(),
      AddData(r, upTo("x", 10), row("x", 30, 9)),
      CheckNewAnswer(("x", 3, 9)),
      // x at minutes 1 and 2 purged; x 30 and y 1 untouched, and not read
      AssertPunctuatedState(rows = 3, punctuations = 2),    // "x, ts <= 10:10" in 2 partitions
      AssertMetric("numRowsPurged", 2),
      AssertMetric("numStateRowsScanned", 2),
      AssertMetric("numRangeIndexEntries", 3))              // a's x 30 and y 1, b's x 30
  }

  test("an unsafe query fails at start in strict mode, runs in warn and off", NotOnRocksDB) {
    def query() = {
      val bids = MemoryStream[Bid]
      val people = MemoryStream[(Long, String)]
      val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
      val p = people.toDF().toDF("pid", "name")
      (bids, people, b.join(p, b("bidder") === p("pid")).select(b("auction"), p("name")))
    }
    val (_, _, joined) = query()
    val e = intercept[AnalysisException] {
      joined.writeStream.format("memory").queryName("unsafe").start()
    }
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY")
    assert(e.getMessage.contains("input bids") && e.getMessage.contains("(right input)") && e.getMessage.contains("pid") &&
      e.getMessage.contains("spark.punctuated.safety.mode=warn"), e.getMessage)
    for (mode <- Seq("warn", "off")) withSQLConf(PunctuatedConf.SafetyMode -> mode) {
      val (bids, people, joined) = query()
      testStream(joined)(
        AddData(bids, bid(1, 100, 5.0)),
        AddData(people, (100L, "ann")),
        CheckNewAnswer((1L, "ann")))
    }
  }

  test("queries without declarations run Spark's own join", NotOnRocksDB) {
    val l = MemoryStream[(Long, String)]
    val r = MemoryStream[(Long, String)]
    val joined = l.toDF().toDF("k", "a").join(r.toDF().toDF("k", "b"), "k")
    assert(!joined.queryExecution.analyzed.toString.contains("punctuation_columns"))
    testStream(joined)(
      AddData(l, (1L, "x")),
      AddData(r, (1L, "y")),
      CheckNewAnswer((1L, "x", "y")),
      AssertOnQuery { q =>
        q.lastExecution.executedPlan.collect { case j: StreamingSymmetricHashJoinExec => j }.size == 1
      })
  }
}

class PunctuatedJoinRocksDBSuite extends PunctuatedJoinSuite with OnRocksDB
