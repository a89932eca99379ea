package punctuated.aggregate

import org.apache.spark.SparkException
import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.execution.ProjectExec
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{avg, count, max, sum}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.input.PunctuationKind
import punctuated.join.JoinTestData._
import punctuated.join.{Auction, Bid}
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/** Reading of a sensor: hour punctuated by a range scheme `hour<=`. */
case class Reading(sensor: Option[Long], hour: Option[Int], temp: Option[Double], is_punct: Boolean = false)

/**
 * Punctuated GROUP BY in append mode without a watermark, scripted batch by batch, on the
 * HDFS-backed state store; [[PunctuatedAggregateRocksDBSuite]] runs the same on RocksDB.
 */
class PunctuatedAggregateSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def bidsStream() = {
    val bids = MemoryStream[Bid]
    (bids, declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct"))
  }

  private def readings() = {
    val input = MemoryStream[Reading]
    (input, declare(input.toDF(), "readings", Schemes -> "hour<=", Marker -> "is_punct"))
  }

  private def reading(sensor: Long, hour: Int, temp: Double) = Reading(Some(sensor), Some(hour), Some(temp))
  private def closeHours(upTo: Int) = Reading(None, Some(upTo), None, is_punct = true)

  private def ExpectPunctuatedPlan = AssertOnQuery("planned with the punctuated aggregation") { q =>
    q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }.size == 1
  }


  test("generated code: the kind column and the partial aggregation stay in one whole-stage loop, punctuations decoded", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.InvalidPunctuations -> "drop")(generatedCode())
  }

  private def generatedCode(): Unit = {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(count("*").as("n"), max("price").as("top"))
    testStream(totals, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 3.0), closeBids(2),
        Bid(None, Some(7L), None, is_punct = true)),          // sets no declared scheme: invalid
      CheckNewAnswer((2L, 1L, 3.0)),
      AssertCounted("numInvalidPunctuationsDropped", 1),
      AssertOnQuery("punctuation_kind and the partial aggregation run in generated code") { q =>
        val plan = q.lastExecution.executedPlan
        import org.apache.spark.sql.execution.{InputAdapter, SparkPlan, WholeStageCodegenExec}
        val stages = plan.collect { case w: WholeStageCodegenExec => w }
        // the operators a stage generates code for: down to its inputs (InputAdapter), not below
        def generated(p: SparkPlan): Seq[SparkPlan] = p match {
          case _: InputAdapter => Nil
          case other => other +: other.children.flatMap(generated)
        }
        def inStage(p: SparkPlan => Boolean) = stages.exists(s => generated(s.child).exists(p))
        assert(inStage { case p: org.apache.spark.sql.execution.ProjectExec =>
          p.projectList.exists(_.exists(_.isInstanceOf[punctuated.input.PunctuationKind])); case _ => false },
          plan.treeString)
        assert(inStage { case a: org.apache.spark.sql.execution.aggregate.HashAggregateExec =>
          a.aggregateExpressions.exists(_.exists(_.isInstanceOf[punctuated.input.PunctuationTag])); case _ => false },
          plan.treeString)
        true
      })
  }

  test("group by a punctuated column: a group's final row comes when its punctuation does") {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(count("*").as("n"), sum("price").as("total"), max("price").as("top"))
    testStream(totals, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(1, 101, 7.5), bid(2, 100, 3.0)),
      CheckNewAnswer(),
      ExpectPunctuatedPlan,
      AssertPunctuatedState(rows = 2, punctuations = 0),
      AddData(bids, bid(1, 102, 9.0), closeBids(1)),
      CheckNewAnswer((1L, 3L, 21.5, 9.0)),
      AssertPunctuatedState(rows = 1, punctuations = 0),
      AssertCounted("numPunctuationsReceived", 1),
      AssertMetric("numRowsPurged", 1),
      StopStream,
      StartStream(),
      AddData(bids, bid(2, 103, 4.0)),
      CheckNewAnswer(),
      AddData(bids, closeBids(2), closeBids(3)),
      CheckNewAnswer((2L, 2L, 7.0, 4.0)),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("memoryUsedBytes counts the held-punctuations store too, not only the groups'", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.PunctuationRetention -> "2") {
      val (bids, b) = bidsStream()
      val totals = b.groupBy("auction").agg(count("*").as("n"))
      val hdfs = spark.conf.get(SQLConf.STATE_STORE_PROVIDER_CLASS.key).contains("HDFSBackedStateStoreProvider")
      var groupsOnly = 0L
      testStream(totals, OutputMode.Append())(
        AddData(bids, bid(1, 100, 5.0)),
        CheckNewAnswer(),
        AssertPunctuatedState(rows = 1, punctuations = 0),
        AssertOnQuery("memory of one group") { q => groupsOnly = punctuatedProgress(q).memoryUsedBytes; true },
        // 200 auctions without bids close: no group changes, 200 punctuations held (retention 2)
        AddData(bids, (2 to 201).map(a => closeBids(a.toLong)): _*),
        CheckNewAnswer(),
        AssertPunctuatedState(rows = 1, punctuations = 200),
        AssertOnQuery("the held punctuations' memory is counted") { q =>
          val now = punctuatedProgress(q).memoryUsedBytes
          // HDFS-backed stores estimate their maps: 200 entries of at least 16 bytes each.
          // (RocksDB reports its instances' native memory, not per entry: only no less.)
          if (hdfs) assert(now - groupsOnly >= 200 * 16, s"memoryUsedBytes $now, with the group only $groupsOnly")
          else assert(now >= groupsOnly, s"memoryUsedBytes $now < $groupsOnly")
          true
        })
    }
  }

  test("a punctuation in the same batch as the group's first rows closes it at once", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(avg("price").as("mean"))
    testStream(totals, OutputMode.Append())(
      AddData(bids, closeBids(4), bid(4, 100, 2.0), bid(4, 101, 4.0)),
      CheckNewAnswer((4L, 3.0)),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("range scheme hour<=: one punctuation closes every earlier hour; late rows are dropped") {
    val (input, r) = readings()
    val hottest = r.groupBy("hour").agg(max("temp").as("max_temp"))
    testStream(hottest, OutputMode.Append())(
      AddData(input, reading(1, 9, 20.1), reading(2, 10, 22.0), reading(1, 11, 18.0)),
      CheckNewAnswer(),
      AddData(input, reading(2, 10, 23.5), closeHours(10)),
      CheckNewAnswer((9, 20.1), (10, 23.5)),
      AssertPunctuatedState(rows = 1, punctuations = 2),   // "hour <= 10": a copy in each of 2 partitions
      StopStream,
      StartStream(),
      AddData(input, reading(3, 9, 30.0), reading(3, 12, 15.0)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      AssertPunctuatedState(rows = 2, punctuations = 2),
      AddData(input, closeHours(12)),
      CheckNewAnswer((11, 18.0), (12, 15.0)),
      AssertPunctuatedState(rows = 0, punctuations = 2))   // "hour <= 12", in both
  }

  test("range punctuations reach every partition through the aggregation's own shuffle: one job per micro-batch", NotOnRocksDB) {
    // the micro-batches' jobs, by batch id (Spark sets it as a local property of each job)
    val jobs = new java.util.concurrent.ConcurrentHashMap[String, Integer]()
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onJobStart(e: org.apache.spark.scheduler.SparkListenerJobStart): Unit =
        Option(e.properties).flatMap(p => Option(p.getProperty("streaming.sql.batchId")))
          .foreach(b => jobs.merge(b, 1, (x: Integer, y: Integer) => x + y))
    }
    spark.sparkContext.addSparkListener(listener)
    try withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "3") {
      val (input, r) = readings()
      val hottest = r.groupBy("hour").agg(max("temp").as("max_temp"))
      testStream(hottest, OutputMode.Append())(
        AddData(input, reading(1, 9, 20.1), reading(2, 10, 22.0), reading(1, 11, 18.0), reading(1, 12, 1.0)),
        CheckNewAnswer(),
        // the punctuation and a row of hour 10 merge into one partial aggregate: its copies in
        // the other partitions close their hours, the home copy also carries the row
        AddData(input, reading(2, 10, 23.5), closeHours(10)),
        CheckNewAnswer((9, 20.1), (10, 23.5)),
        AssertPunctuatedState(rows = 2, punctuations = 3),   // "hour <= 10" in each of 3 partitions
        AssertCounted("numPunctuationsReceived", 1),           // counted once, at home
        AssertOnQuery("a replicating exchange below the operator") { q =>
          val plan = q.lastExecution.executedPlan
          plan.collect { case p: PunctuatedAggregateExec => p.partitionWide }.forall(_.isInstanceOf[ThroughShuffle]) &&
            plan.collect { case e: punctuated.input.PunctuationReplicatingExchangeExec => e }.size == 1
        },
        AddData(input, closeHours(12)),
        CheckNewAnswer((11, 18.0), (12, 1.0)),
        AssertPunctuatedState(rows = 0, punctuations = 3),
        AssertOnQuery("no job gathers punctuations: one job per micro-batch") { q =>
          import org.scalatest.concurrent.Eventually
          Eventually.eventually(Eventually.timeout(org.scalatest.time.Span(10, org.scalatest.time.Seconds))) {
            assert(jobs.size >= 3)
          }
          assert(jobs.values.stream().allMatch(_ == 1), jobs.toString)
          true
        })
    } finally spark.sparkContext.removeSparkListener(listener)
  }

  test("late rows fail the query with spark.punctuated.lateRows=fail", NotOnRocksDB) {
    val (input, r) = readings()
    val hottest = r.groupBy("hour").agg(max("temp"))
    testStream(hottest, OutputMode.Append())(
      StartStream(additionalConfs = Map(PunctuatedConf.LateRows -> "fail")),
      AddData(input, reading(1, 9, 20.1), closeHours(9)),
      CheckNewAnswer((9, 20.1)),
      AddData(input, reading(1, 8, 20.1)),
      ExpectFailure[SparkException](e => assert(e.getMessage.contains("PUNCTUATED_LATE_ROW"), e.getMessage)))
  }

  test("late rows under the defaults: a closed group gets no second final row, across a restart") {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(count("*").as("n"), sum("price").as("total"))
    testStream(totals, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), closeBids(1)),
      CheckNewAnswer((1L, 1L, 5.0)),
      AssertPunctuatedState(rows = 0, punctuations = 0),      // retention 0: nothing held...
      AddData(bids, bid(1, 101, 9.0)),                        // late: auction 1 closed
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      AssertPunctuatedState(rows = 0, punctuations = 0),
      AddData(bids, closeBids(1)),                            // a repeated punctuation
      CheckNewAnswer(),                                       // no second (1, 1, 9.0)
      StopStream,
      StartStream(),
      AddData(bids, bid(1, 102, 4.0), bid(2, 100, 1.0), closeBids(1), closeBids(2)),
      CheckNewAnswer((2L, 1L, 1.0)),
      AssertCounted("numLateRowsDropped", 1),
      AssertOnQuery("...but auctions 1 and 2 are remembered") { q =>
        punctuatedProgress(q).customMetrics.get("numClosedValuesRemembered") >= 1L
      })
  }

  test("late rows under the defaults fail the query with lateRows=fail, across a restart") {
    withSQLConf(PunctuatedConf.LateRows -> "fail") {
      val (bids, b) = bidsStream()
      val totals = b.groupBy("auction").agg(sum("price"))
      testStream(totals, OutputMode.Append())(
        AddData(bids, bid(1, 100, 5.0), closeBids(1)),
        CheckNewAnswer((1L, 5.0)),
        StopStream,
        StartStream(),
        AddData(bids, bid(1, 101, 9.0)),
        ExpectFailure[SparkException] { e =>
          assert(e.getMessage.contains("PUNCTUATED_LATE_ROW") && e.getMessage.contains("auction=1"), e.getMessage)
        })
    }
  }

  test("closed values are remembered compactly: sequential ids merge into one interval per partition", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(sum("price"))
    val ids = 1L to 60L
    testStream(totals, OutputMode.Append())(
      AddData(bids, ids.flatMap(id => Seq(bid(id, 100, 1.0), closeBids(id))): _*),
      CheckNewAnswer(ids.map(id => Row(id, 1.0)): _*),
      // 60 closed auctions over 2 partitions: one interval each (gaps hash elsewhere)
      AssertMetric("numClosedValuesRemembered", 2),
      AddData(bids, ids.map(id => bid(id, 101, 2.0)): _*),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 60))
  }

  test("spark.punctuated.lateRows.maxRemembered bounds what is remembered; the rest is counted as forgotten", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(sum("price"))
    val far = Seq(1L, 1000L, 1000000L, 1000000000L)    // no interval can merge them
    testStream(totals, OutputMode.Append())(
      StartStream(additionalConfs = Map(PunctuatedConf.MaxRemembered -> "1")),
      AddData(bids, far.map(closeBids): _*),
      CheckNewAnswer(),
      AssertOnQuery("at most one entry per partition; the others forgotten") { q =>
        val m = punctuatedProgress(q).customMetrics
        val (remembered, forgotten) = (m.get("numClosedValuesRemembered"), m.get("numClosedValuesForgotten"))
        assert(remembered <= 2 && remembered + forgotten == 4, punctuatedProgress(q).json)
        true
      })
  }

  test("group by a join's output: each auction's total when the auction closes") {
    val auctions = MemoryStream[Auction]
    val (bids, b) = bidsStream()
    val a = declare(auctions.toDF(), "auctions", Unique -> "id", Marker -> "is_punct")
    val totals = a.join(b, a("id") === b("auction")).groupBy(a("id")).agg(sum("price").as("total"))
    testStream(totals, OutputMode.Append())(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 3.0)),
      CheckNewAnswer(),
      AddData(bids, bid(1, 101, 7.5), closeBids(1)),
      CheckNewAnswer((1L, 12.5)),
      StopStream,
      StartStream(),
      AddData(bids, bid(2, 101, 1.0), closeBids(2)),
      CheckNewAnswer((2L, 4.0)),
      AssertOnQuery { q =>
        settledProgress(q).stateOperators.forall(_.numRowsTotal == 0)
      })
  }

  test("chained aggregations: the first one's punctuations close the second one's groups", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val perBidder = b.groupBy("auction", "bidder").agg(max("price").as("best"))
    val perAuction = perBidder.groupBy("auction").agg(count("*").as("bidders"), sum("best").as("sum_best"))
    testStream(perAuction, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(1, 101, 7.5), bid(2, 100, 1.0)),
      CheckNewAnswer(),
      AddData(bids, closeBids(1)),
      CheckNewAnswer((1L, 2L, 13.5)),
      AddData(bids, closeBids(2)),
      CheckNewAnswer((2L, 1L, 1.0)),
      AssertOnQuery(q => settledProgress(q).stateOperators.forall(_.numRowsTotal == 0)))
  }

  test("a filter between the stream and the aggregation lets punctuations through", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val totals = b.filter($"price" > 2.0).groupBy("auction").agg(sum("price").as("total"))
    testStream(totals, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(1, 101, 1.0), closeBids(1)),
      CheckNewAnswer((1L, 5.0)))
  }

  test("update mode: changed groups each batch, closed groups leave the state", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(sum("price").as("total"))
    testStream(totals, OutputMode.Update())(
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 3.0)),
      CheckNewAnswer((1L, 5.0), (2L, 3.0)),
      AddData(bids, bid(1, 101, 1.0), closeBids(1)),
      CheckNewAnswer((1L, 6.0)),
      AssertPunctuatedState(rows = 1, punctuations = 0))
  }

  test("punctuations reach the results with emitPunctuations=true", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.EmitPunctuations -> "true") {
      val (bids, b) = bidsStream()
      val totals = b.groupBy("auction").agg(sum("price").as("total"))
      assert(totals.columns.toSeq == Seq("auction", "total", "is_punct"))
      testStream(totals, OutputMode.Append())(
        AddData(bids, bid(1, 100, 5.0), closeBids(1)),
        CheckNewAnswer((1L, Some(5.0), false), (1L, None, true)))
    }
  }

  test("invalid punctuations fail the query, or are counted with invalidPunctuations=drop", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(sum("price"))
    testStream(totals, OutputMode.Append())(
      AddData(bids, Bid(None, Some(3L), None, is_punct = true)),
      ExpectFailure[SparkException](e => assert(e.getMessage.contains("PUNCTUATED_INVALID_PUNCTUATION"), e.getMessage)))
    val (bids2, b2) = bidsStream()
    val totals2 = b2.groupBy("auction").agg(sum("price"))
    testStream(totals2, OutputMode.Append())(
      StartStream(additionalConfs = Map(PunctuatedConf.InvalidPunctuations -> "drop")),
      AddData(bids2, Bid(None, Some(3L), None, is_punct = true), bid(1, 1, 1.0), closeBids(1)),
      CheckNewAnswer((1L, 1.0)),
      AssertCounted("numInvalidPunctuationsDropped", 1))
  }

  test("an invalid punctuation in a group that stays open is counted once, not again with each later batch", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val totals = b.groupBy("auction").agg(sum("price"))
    testStream(totals, OutputMode.Append())(
      StartStream(additionalConfs = Map(PunctuatedConf.InvalidPunctuations -> "drop")),
      AddData(bids, bid(1, 100, 5.0), Bid(Some(1L), None, Some(2.0), is_punct = true)),  // price set: invalid
      CheckNewAnswer(),
      AddData(bids, bid(1, 101, 1.0)),
      CheckNewAnswer(),
      AddData(bids, bid(1, 102, 1.0)),
      CheckNewAnswer(),
      AssertCounted("numInvalidPunctuationsDropped", 1),
      AddData(bids, closeBids(1)),
      CheckNewAnswer((1L, 7.0)),
      AssertCounted("numInvalidPunctuationsDropped", 1),
      AssertCounted("numPunctuationsReceived", 1))
  }

  test("grouping columns no scheme closes: start() fails in strict mode, naming the fix", NotOnRocksDB) {
    val (bids, b) = bidsStream()
    val perBidder = b.groupBy("bidder").agg(sum("price"))
    val e = intercept[Exception] {
      perBidder.writeStream.format("memory").queryName("unsafe_agg").outputMode("update").start()
    }
    val text = Option(e.getCause).map(_.getMessage).getOrElse("") + e.getMessage
    assert(text.contains("PUNCTUATED_UNSAFE_QUERY") && text.contains("GROUP BY bidder") &&
      text.contains("punctuated.schemes"), text)
  }

  test("union of two sensor streams: an hour closes only when both streams closed it (setCombine)") {
    val (a, ra) = readings()
    val b = MemoryStream[Reading]
    val rb = declare(b.toDF(), "readings_b", Schemes -> "hour<=", Marker -> "is_punct")
    val hottest = ra.union(rb).groupBy("hour").agg(max("temp").as("max_temp"))
    testStream(hottest, OutputMode.Append())(
      MultiAddData(a, reading(1, 9, 20.0), closeHours(9))(b, reading(2, 9, 25.0), reading(2, 10, 21.0)),
      CheckNewAnswer(),                       // only stream a closed hour 9
      AddData(b, reading(2, 9, 26.0), closeHours(10)),
      CheckNewAnswer((9, 26.0)),              // now both: min(9, 10) = 9
      StopStream,
      StartStream(),
      AddData(a, reading(1, 10, 30.0), closeHours(12)),
      CheckNewAnswer((10, 30.0)),
      AddData(a, reading(1, 8, 99.0)),        // every stream closed hour 8: late
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1))
  }

  test("a batch without rows of the aggregation's stream: still the punctuated operator, across a restart") {
    val (bids, b) = bidsStream()
    val others = MemoryStream[(Long, Double)]
    val totals = b.groupBy("auction").agg(sum("price").as("total"))
      .union(others.toDF().toDF("auction", "total"))
    // in such a batch the stream is an empty relation: so is the projection computing the
    // kind column, and the operator's layout comes from what its aggregation carries
    val KindFromEmptyRelation = AssertOnQuery("kind column from an empty relation, punctuated operator") { q =>
      val plan = q.lastExecution.executedPlan
      plan.collect { case p: ProjectExec => p }.forall(!_.projectList.exists(_.exists(_.isInstanceOf[PunctuationKind]))) &&
        plan.collect { case p: PunctuatedAggregateExec => p }.size == 1
    }
    testStream(totals, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 3.0)),
      CheckNewAnswer(),
      ExpectPunctuatedPlan,
      AddData(others, (9L, 1.0)),
      CheckNewAnswer((9L, 1.0)),
      KindFromEmptyRelation,
      AssertPunctuatedState(rows = 2, punctuations = 0),
      StopStream,
      StartStream(),
      AddData(others, (8L, 2.0)),
      CheckNewAnswer((8L, 2.0)),
      KindFromEmptyRelation,
      AssertPunctuatedState(rows = 2, punctuations = 0),
      AddData(bids, bid(1, 101, 1.0), closeBids(1)),
      CheckNewAnswer((1L, 6.0)),
      AssertPunctuatedState(rows = 1, punctuations = 0))
  }

  test("aggregations over undeclared streams are Spark's own", NotOnRocksDB) {
    val input = MemoryStream[Bid]
    val totals = input.toDF().groupBy("auction").agg(sum("price"))
    testStream(totals, OutputMode.Update())(
      AddData(input, bid(1, 100, 5.0)),
      CheckNewAnswer((1L, 5.0)),
      AssertOnQuery(q => q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }.isEmpty))
  }
}

class PunctuatedAggregateRocksDBSuite extends PunctuatedAggregateSuite with OnRocksDB
