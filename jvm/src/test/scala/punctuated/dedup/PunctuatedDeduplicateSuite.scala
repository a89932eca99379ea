package punctuated.dedup

import org.apache.spark.SparkException
import org.apache.spark.sql.execution.ProjectExec
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.count
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.aggregate.Reading
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.input.PunctuationKind
import punctuated.join.Bid
import punctuated.join.JoinTestData._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Punctuated dropDuplicates / DISTINCT, scripted batch by batch, on the HDFS-backed state
 * store; [[PunctuatedDeduplicateRocksDBSuite]] runs the same on RocksDB.
 */
class PunctuatedDeduplicateSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def bidsStream() = {
    val bids = MemoryStream[Bid]
    (bids, declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct"))
  }

  private def ExpectPunctuatedPlan = AssertOnQuery("planned with the punctuated deduplication") { q =>
    q.lastExecution.executedPlan.collect { case p: PunctuatedDeduplicateExec => p }.size == 1
  }

  test("dropDuplicates: first rows at once, seen keys forgotten when punctuated") {
    val (bids, b) = bidsStream()
    val firsts = b.dropDuplicates("auction", "bidder").select("auction", "bidder")
    testStream(firsts)(
      AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(1, 101, 7.5), bid(2, 100, 1.0)),
      CheckNewAnswer((1L, 100L), (1L, 101L), (2L, 100L)),
      ExpectPunctuatedPlan,
      AssertPunctuatedState(rows = 3, punctuations = 0),
      StopStream,
      StartStream(),
      AddData(bids, bid(1, 100, 8.0), bid(2, 102, 1.0), closeBids(1)),
      CheckNewAnswer((2L, 102L)),
      // auction 1's two keys forgotten (partition-wide: "auction" is part of the key)
      AssertPunctuatedState(rows = 2, punctuations = 0),
      AddData(bids, closeBids(2)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("a micro-batch's deduplication opens its state store with the run's Hadoop conf: it broadcasts none of its own (from Spark 4.2)") {
    val (bids, b) = bidsStream()
    val firsts = b.dropDuplicates("auction", "bidder").select("auction", "bidder")
    // broadcasts made while building an operator's RDD (and its children's), from the ids
    // Spark gives broadcasts in turn
    def broadcastsBuilding(p: org.apache.spark.sql.execution.SparkPlan): Long = {
      val before = spark.sparkContext.broadcast(0).id
      p.clone().execute()
      spark.sparkContext.broadcast(0).id - before - 1
    }
    testStream(firsts)(
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 1.0)),
      CheckNewAnswer((1L, 100L), (2L, 100L)),
      AddData(bids, bid(1, 101, 7.5), closeBids(1)),
      CheckNewAnswer((1L, 101L)),
      AssertOnQuery("the deduplication's own RDD broadcasts nothing (from Spark 4.2; before, Spark's RDD does)") { q =>
        val execs = q.lastExecution.executedPlan.collect { case p: PunctuatedDeduplicateExec => p }
        assert(execs.size == 1)
        // Spark 4.0 and 4.1: the operator opens its store with Spark's RDD, which broadcasts the
        // conf again in every micro-batch (punctuated.compat.StateStoreRDDs)
        val sparkBuilt = if (Seq("4.0.", "4.1.").exists(org.apache.spark.SPARK_VERSION.startsWith)) 1L else 0L
        assert(broadcastsBuilding(execs.head) == broadcastsBuilding(execs.head.child) + sparkBuilt, execs.head.treeString)
        true
      },
      StopStream,
      StartStream(),
      AddData(bids, bid(2, 102, 1.0), closeBids(2)),
      CheckNewAnswer((2L, 102L)))
  }

  test("late rows under the defaults: a forgotten key is not emitted again, across a restart") {
    val (bids, b) = bidsStream()
    val firsts = b.dropDuplicates("auction", "bidder").select("auction", "bidder")
    testStream(firsts)(
      AddData(bids, bid(1, 100, 5.0), closeBids(1)),
      CheckNewAnswer((1L, 100L)),
      AssertPunctuatedState(rows = 0, punctuations = 0),
      AddData(bids, bid(1, 100, 6.0)),          // late: not a new first row
      CheckNewAnswer(),
      // the shuffle hashes by auction (KeyPrefix): auction 1's punctuation went to its partition
      // only (by the whole key it went to both, and each remembered it)
      AssertOnQuery("auction 1 remembered by its partition") { q =>
        punctuatedProgress(q).customMetrics.get("numClosedValuesRemembered") == 1L
      },
      StopStream,
      StartStream(),
      AddData(bids, bid(1, 101, 7.0), bid(2, 100, 1.0)),
      CheckNewAnswer((2L, 100L)),
      AssertOnQuery(q => punctuatedProgress(q).customMetrics.get("numLateRowsDropped") == 1L))
  }

  test("late rows under the defaults fail the query with lateRows=fail") {
    withSQLConf(PunctuatedConf.LateRows -> "fail") {
      val (bids, b) = bidsStream()
      val firsts = b.dropDuplicates("auction").select("auction")
      testStream(firsts)(
        AddData(bids, bid(1, 100, 5.0), closeBids(1)),
        CheckNewAnswer(1L),
        StopStream,
        StartStream(),
        AddData(bids, bid(1, 101, 6.0)),
        ExpectFailure[SparkException](e => assert(e.getMessage.contains("PUNCTUATED_LATE_ROW"), e.getMessage)))
    }
  }

  test("DISTINCT in SQL over a declared table: rows at once, keys forgotten when punctuated") {
    withDeclaredTable("readings", "sensor BIGINT, hour INT, temp DOUBLE, is_punct BOOLEAN",
      Map(Schemes -> "hour<=", Marker -> "is_punct")) {
      val input = MemoryStream[Reading]
      input.toDF().createOrReplaceTempView("readings_in")
      val distinctHours = declare(input.toDF(), "readings", Schemes -> "hour<=", Marker -> "is_punct")
        .select("sensor", "hour", "is_punct").distinct().select("sensor", "hour")
      testStream(distinctHours)(
        AddData(input, Reading(Some(1), Some(9), Some(1.0)), Reading(Some(1), Some(9), Some(2.0)),
          Reading(Some(2), Some(10), Some(3.0))),
        CheckNewAnswer((1L, 9), (2L, 10)),
        ExpectPunctuatedPlan,
        AddData(input, Reading(None, Some(9), None, is_punct = true)),
        CheckNewAnswer(),
        AssertPunctuatedState(rows = 1, punctuations = 2),   // "hour <= 9": one copy per partition
        AssertCounted("numPunctuationsReceived", 1),           // counted at home only
        AssertOnQuery("the range punctuation came through the deduplication's own shuffle") { q =>
          val plan = q.lastExecution.executedPlan
          plan.collect { case d: PunctuatedDeduplicateExec => d.replicated }.forall(_.isDefined) &&
            plan.collect { case e: punctuated.input.PunctuationReplicatingExchangeExec => e }.size == 1
        },
        // a late reading of hour 9 (held range punctuation): dropped, not a new distinct row
        AddData(input, Reading(Some(3), Some(9), Some(1.0))),
        CheckNewAnswer())
    }
  }

  test("UNION (distinct) of two streams: a key is forgotten once both streams punctuated it") {
    val (a, ba) = bidsStream()
    val b = MemoryStream[Bid]
    val bb = declare(b.toDF(), "bids_b", Schemes -> "auction", Marker -> "is_punct")
    val both = ba.select("auction", "bidder", "is_punct").union(bb.select("auction", "bidder", "is_punct"))
      .distinct().select("auction", "bidder")
    testStream(both)(
      MultiAddData(a, bid(1, 100, 5.0), closeBids(1))(b, bid(1, 100, 6.0), bid(1, 101, 1.0)),
      CheckNewAnswer((1L, 100L), (1L, 101L)),
      ExpectPunctuatedPlan,
      // only stream a closed auction 1: held (partition-wide: a copy in each of 2 partitions)
      AssertPunctuatedState(rows = 2, punctuations = 2),
      AddData(b, bid(1, 100, 7.0), closeBids(1)),
      CheckNewAnswer(),                                    // still a duplicate
      AssertPunctuatedState(rows = 0, punctuations = 0),
      // both streams closed auction 1 and the punctuations are released: still remembered
      AddData(a, bid(1, 102, 1.0)),
      CheckNewAnswer(),
      AssertOnQuery(q => punctuatedProgress(q).customMetrics.get("numLateRowsDropped") == 1L))
  }

  test("a batch without rows of the deduplication's stream: still the punctuated operator, across a restart") {
    val (bids, b) = bidsStream()
    val others = MemoryStream[(Long, Long)]
    val firsts = b.dropDuplicates("auction", "bidder").select("auction", "bidder")
      .union(others.toDF().toDF("auction", "bidder"))
    // in such a batch the stream is an empty relation: so is the projection computing the
    // kind column, and the operator's layout comes from the tag above the deduplication
    val KindFromEmptyRelation = AssertOnQuery("kind column from an empty relation, punctuated operator") { q =>
      val plan = q.lastExecution.executedPlan
      plan.collect { case p: ProjectExec => p }.forall(!_.projectList.exists(_.exists(_.isInstanceOf[PunctuationKind]))) &&
        plan.collect { case p: PunctuatedDeduplicateExec => p }.size == 1
    }
    testStream(firsts)(
      AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(2, 100, 1.0)),
      CheckNewAnswer((1L, 100L), (2L, 100L)),
      ExpectPunctuatedPlan,
      AddData(others, (9L, 9L)),
      CheckNewAnswer((9L, 9L)),
      KindFromEmptyRelation,
      AssertPunctuatedState(rows = 2, punctuations = 0),
      StopStream,
      StartStream(),
      AddData(others, (8L, 8L)),
      CheckNewAnswer((8L, 8L)),
      KindFromEmptyRelation,
      AssertPunctuatedState(rows = 2, punctuations = 0),
      AddData(bids, bid(1, 100, 7.0), bid(1, 101, 1.0), closeBids(1)),
      CheckNewAnswer((1L, 101L)),
      AssertPunctuatedState(rows = 1, punctuations = 0))
  }

  test("an aggregation over a deduplication: the deduplication passes punctuations on") {
    val (bids, b) = bidsStream()
    val bidders = b.dropDuplicates("auction", "bidder").groupBy("auction").agg(count("*").as("bidders"))
    testStream(bidders, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(1, 101, 7.5)),
      CheckNewAnswer(),
      AddData(bids, bid(1, 102, 1.0), closeBids(1)),
      CheckNewAnswer((1L, 3L)),
      AssertOnQuery(q => settledProgress(q).stateOperators.forall(_.numRowsTotal == 0)))
  }

  test("a scheme the deduplication does not close on still passes it to an aggregation above") {
    // schemes "bidder; auction", dropDuplicates("bidder"): the auction punctuation closes no
    // key of the deduplication, but the aggregation by auction above closes its group with it
    val bids = MemoryStream[Bid]
    val b = declare(bids.toDF(), "bids", Schemes -> "bidder; auction", Marker -> "is_punct")
    val perAuction = b.dropDuplicates("bidder").groupBy("auction").agg(count("*").as("first_bids"))
    testStream(perAuction, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(1, 101, 7.5), bid(2, 100, 1.0)),
      CheckNewAnswer(),
      AddData(bids, closeBids(1)),
      CheckNewAnswer((1L, 2L)),
      AssertOnQuery("the deduplication received the auction punctuation") { q =>
        punctuatedCount(q, "numPunctuationsReceived") >= 1 &&
          q.lastExecution.executedPlan.collect { case p: PunctuatedDeduplicateExec => p }.size == 1
      },
      StopStream,
      StartStream(),
      AddData(bids, bid(2, 102, 2.0), closeBids(2)),
      CheckNewAnswer((2L, 1L)))
  }
}

class PunctuatedDeduplicateRocksDBSuite extends PunctuatedDeduplicateSuite with OnRocksDB
