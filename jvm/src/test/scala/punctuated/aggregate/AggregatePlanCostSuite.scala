package punctuated.aggregate

import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference, If}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Final}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Filter, Generate, Project}
import org.apache.spark.sql.execution.{GenerateExec, InputAdapter, ProjectExec, SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.aggregate.HashAggregateExec
import org.apache.spark.sql.functions.{col, count, max, window}
import org.apache.spark.sql.streaming.OutputMode

import punctuated.compat.{MemoryStream, StateStoreRestoreExec, StreamExecution}
import punctuated.declaration.Declaration._
import punctuated.input.{PunctuationOutputs, PunctuationTag}
import punctuated.join.Bid
import punctuated.join.JoinTestData._
import punctuated.spark.PunctuatedStreamTest
import punctuated.spark.rules.{DropOuterJoinCheckFlag, PassPunctuationsThroughFilters}
import punctuated.state.HadoopConfPerRun

/**
 * What a punctuated aggregation costs per micro-batch beyond its own work, kept out of the
 * hot path: the `Generate` that splits an output group into its final row and its
 * punctuations runs in generated code, and the Hadoop conf its tasks open the
 * held-punctuations store with is broadcast once per run, not once per batch (and its state
 * store, read by the restore step and written by the operator, is opened with it).
 */
class AggregatePlanCostSuite extends PunctuatedStreamTest {
  import testImplicits._

  // a small memory page, so that a task's peak of execution memory tells one page from two
  private val PageSize = 4L << 20
  override protected def sparkConf = super.sparkConf.set("spark.buffer.pageSize", PageSize.toString)

  private def twoAggregations() = {
    val bids = MemoryStream[Bid]
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    // bids per auction and bidder, then the most any bidder placed per auction: the second
    // closes on the first's output punctuations (q5's shape)
    val perBidder = b.groupBy("auction", "bidder").agg(count("*").as("n"))
    (bids, perBidder.groupBy(col("auction")).agg(max("n").as("most")))
  }

  /** The broadcast ids of the Hadoop conf given to each punctuated aggregation of the last batch. */
  private def confIds(q: StreamExecution): Seq[Long] =
    q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }
      .map(_.getTagValue(HadoopConfPerRun.Tag).map(_.id).getOrElse(-1L))

  test("the Generate above a punctuated aggregation runs inside a whole-stage loop") {
    val (bids, counts) = twoAggregations()
    testStream(counts, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(2, 100, 3.0), closeBids(1), closeBids(2)),
      CheckNewAnswer((1L, 2L), (2L, 1L)),
      AssertOnQuery("every Generate of punctuation_outputs is generated code") { q =>
        val plan = q.lastExecution.executedPlan
        def generated(p: SparkPlan): Seq[SparkPlan] = p match {
          case _: InputAdapter => Nil
          case other => other +: other.children.flatMap(generated)
        }
        val inStages = plan.collect { case w: WholeStageCodegenExec => generated(w.child) }.flatten
        val generates = plan.collect { case g @ GenerateExec(e, _, _, _, _) if e.exists(_.isInstanceOf[PunctuationOutputs]) => g }
        // the first aggregation's (the second reads its punctuations); the second's goes (FinalRowsOnly)
        assert(generates.size == 1, plan.treeString)
        assert(generates.forall(g => inStages.exists(_ eq g)), plan.treeString)
        assert(generates.head.collectFirst { case a: PunctuatedAggregateExec => a.emit } == Some(true))
        true
      })
  }

  test("an aggregation whose punctuations nothing uses outputs its final rows without the Generate") {
    def generatesAbove(q: StreamExecution): Seq[Boolean] = q.lastExecution.executedPlan.collect {
      case a: PunctuatedAggregateExec => a
    }.map(a => q.lastExecution.executedPlan.exists {
      case g @ GenerateExec(e, _, _, _, _) => e.isInstanceOf[org.apache.spark.sql.catalyst.expressions.Explode] &&
        g.collectFirst { case b: PunctuatedAggregateExec => b }.exists(_ eq a)
      case _ => false
    })
    val bids = MemoryStream[Bid]
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    val most = b.groupBy("auction").agg(max("price").as("most"), count("*").as("n"))
    testStream(most, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(1, 101, 6.0), bid(2, 100, 3.0), closeBids(1)),
      CheckNewAnswer((1L, 6.0, 2L)),
      AssertOnQuery("no Generate above the aggregation, the columns as nullable as before") { q =>
        assert(generatesAbove(q) == Seq(false), q.lastExecution.executedPlan.treeString)
        val output = punctuated.spark.rules.PlanPunctuatedAggregates.queryOutput(q.lastExecution.executedPlan)
        assert(output.map(_.name) == Seq("auction", "most", "n"))
        assert(output.map(_.nullable) == most.schema.map(_.nullable), output)
        // and no IF(out > 0, NULL, x) is left in what computes the final rows
        val finalRows = q.lastExecution.executedPlan.collect {
          case p @ ProjectExec(_, _: HashAggregateExec) => p.projectList
          case a: HashAggregateExec if a.aggregateExpressions.forall(_.mode == Final) => a.resultExpressions
        }.flatten
        assert(finalRows.nonEmpty && !finalRows.exists(_.exists(_.isInstanceOf[If])),
          q.lastExecution.executedPlan.treeString)
        true
      },
      AssertOnQuery("the plan each micro-batch re-optimizes has no Generate; the optimizer keeps the " +
          "hidden counts and leaves no append-check flag") { q =>
        val analyzed = q.lastExecution.analyzed
        assert(!analyzed.exists(_.isInstanceOf[Generate]), analyzed.treeString)
        // nor a projection above the aggregation (folded into it at start), and the projections
        // below it carry only what the aggregation, its kind and its key read: not `bidder`
        assert(!analyzed.exists { case Project(_, _: Aggregate) => true; case _ => false }, analyzed.treeString)
        val below = analyzed.collect { case Aggregate(_, _, p1 @ Project(_, p2: Project), _) => Seq(p1, p2) }.flatten
        assert(below.size == 2 && below.forall(p => !p.output.exists(_.name == "bidder")) &&
          below.forall(_.output.exists(_.name == "price")), analyzed.treeString)
        val optimized = q.lastExecution.optimizedPlan
        val aggregates = optimized.collect { case a: Aggregate => a }
        assert(aggregates.size == 1)
        val hidden = aggregates.head.aggregateExpressions.flatMap(_.collect { case e: AggregateExpression => e })
          .filter(_.exists(_.isInstanceOf[PunctuationTag]))
        // one aggregate computes them all (no FILTER: one update per stage, not four)
        assert(hidden.map(_.aggregateFunction.getClass) == Seq(classOf[PunctuationCounts]), aggregates.head)
        assert(hidden.forall(_.filter.isEmpty), aggregates.head)
        // the flag that let the aggregation pass Spark's append-mode check is gone everywhere
        val flagged = optimized.flatMap(_.expressions.flatMap(_.collect {
          case a: AttributeReference if a.metadata.contains(PunctuatedAggregates.CheckFlag) => a
          case a: Alias if a.metadata.contains(PunctuatedAggregates.CheckFlag) => a
        }))
        assert(flagged.isEmpty, optimized.treeString)
        true
      },
      AddData(bids, bid(2, 102, 4.0), closeBids(2), bid(3, 100, 1.0)),
      CheckNewAnswer((2L, 4.0, 2L)),
      StopStream,
      StartStream(),
      AddData(bids, bid(3, 103, 2.0), closeBids(3)),
      CheckNewAnswer((3L, 2.0, 2L)))
    // the results show the punctuations: the Generate stays
    withSQLConf(punctuated.conf.PunctuatedConf.EmitPunctuations -> "true") {
      val shown = MemoryStream[Bid]
      val s = declare(shown.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
      testStream(s.groupBy("auction").agg(max("price").as("most")), OutputMode.Append())(
        AddData(shown, bid(1, 100, 5.0), closeBids(1)),
        ProcessAllAvailable(),
        AssertOnQuery("the Generate stays") { q => assert(generatesAbove(q) == Seq(true)); true })
    }
  }

  test("what the extension's optimizer rules found in every micro-batch's plan is done once, at start") {
    import EventTimeAggregateSuite._
    val input = MemoryStream[TimedReading]
    val r = declare(input.toDF(), "readings", Schemes -> "ts<=", Marker -> "is_punct")
    // a window adds `ts IS NOT NULL` to the analyzed plan; the aggregation's key is flagged for
    // Spark's append-mode check
    val out = r.groupBy(window(col("ts"), "10 minutes")).agg(count("*").as("n")).select(col("window.start"), col("n"))
    val leftForEachBatch = AssertOnQuery("the plan each micro-batch re-optimizes has no append-check flag, " +
        "its filter already lets punctuations through, and neither rule finds anything in it") { q =>
      val analyzed = q.lastExecution.analyzed
      val flagged = analyzed.flatMap(_.expressions.flatMap(_.collect {
        case a: AttributeReference if a.metadata.contains(PunctuatedAggregates.CheckFlag) => a
        case a: Alias if a.explicitMetadata.exists(_.contains(PunctuatedAggregates.CheckFlag)) => a
      }))
      assert(flagged.isEmpty, analyzed.treeString)
      val filters = analyzed.collect { case f: Filter => f }
      assert(filters.nonEmpty && filters.forall(_.condition.references.exists(_.name == "is_punct")), analyzed.treeString)
      assert(DropOuterJoinCheckFlag(spark)(analyzed) eq analyzed)
      assert(PassPunctuationsThroughFilters(spark)(analyzed) eq analyzed)
      true
    }
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 20.0), reading(2, "10:08", 21.5), reading(1, "10:12", 19.0)),
      CheckNewAnswer(),
      leftForEachBatch,
      AddData(input, upTo("10:10")),
      CheckNewAnswer(Row(t("10:00"), 2L)),
      StopStream,
      StartStream(),
      AddData(input, reading(3, "10:15", 25.0), upTo("10:20")),
      CheckNewAnswer(Row(t("10:10"), 2L)),
      leftForEachBatch)
  }

  test("a task of a punctuated aggregation holds one hash map's memory page at a time, where only punctuations came too") {
    import EventTimeAggregateSuite._
    // the stateful tasks' peak of execution memory, from the micro-batch after `from` on
    val peaks = new java.util.concurrent.ConcurrentLinkedQueue[java.lang.Long]()
    @volatile var recording = false
    val listener = new org.apache.spark.scheduler.SparkListener {
      override def onTaskEnd(e: org.apache.spark.scheduler.SparkListenerTaskEnd): Unit =
        if (recording && e.taskMetrics != null) peaks.add(e.taskMetrics.peakOnHeapExecutionMemory)
    }
    val input = MemoryStream[TimedReading]
    val r = declare(input.toDF(), "readings", Schemes -> "ts<=", Marker -> "is_punct")
    val out = r.groupBy(window(col("ts"), "10 minutes")).agg(count("*").as("n")).select(col("window.start"), col("n"))
    spark.sparkContext.addSparkListener(listener)
    try testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 20.0)),
      CheckNewAnswer(),
      Execute("record the next micro-batch's tasks") { _ => recording = true },
      // one window's rows reach one partition; the punctuation reaches both: both merges of both
      // partitions hold a group, each in a page of its own
      AddData(input, reading(2, "10:08", 21.5), upTo("10:10")),
      CheckNewAnswer(Row(t("10:00"), 2L)),
      AssertOnQuery("no task held two pages") { q =>
        val page = PageSize
        def recorded = peaks.toArray.map(_.asInstanceOf[java.lang.Long].longValue)
        // the scan's partial aggregation (one task: one source partition) and each of the two
        // stateful tasks hold a page (and a map's pointer array) ...
        eventually(timeout(org.scalatest.time.Span(10, org.scalatest.time.Seconds))) {
          assert(recorded.count(_ >= page) >= 3, recorded.toSeq)
        }
        recording = false
        // ... one: reading the merge below to its end first frees its page for the merge above
        assert(recorded.forall(_ < page + page / 2), recorded.toSeq)
        true
      })
    finally spark.sparkContext.removeSparkListener(listener)
  }

  test("the tasks' Hadoop conf: one broadcast per run, shared by the run's aggregations; a new run broadcasts anew") {
    val (bids, counts) = twoAggregations()
    var first = Seq.empty[Long]
    testStream(counts, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 3.0), closeBids(1)),
      CheckNewAnswer((1L, 1L)),
      AssertOnQuery("both aggregations have the run's broadcast") { q =>
        first = confIds(q)
        assert(first.size == 2 && first.distinct.size == 1 && first.head >= 0, first)
        true
      },
      AddData(bids, bid(2, 101, 4.0), closeBids(2)),
      CheckNewAnswer((2L, 1L)),
      AssertOnQuery("the next micro-batch reuses it") { q => assert(confIds(q) == first); true },
      StopStream,
      StartStream(),
      AddData(bids, bid(3, 100, 1.0), bid(3, 100, 2.0), closeBids(3)),
      CheckNewAnswer((3L, 2L)),
      AssertOnQuery("a new run has a broadcast of its own") { q =>
        val ids = confIds(q)
        assert(ids.distinct.size == 1 && ids.head >= 0 && ids.head != first.head, (ids, first))
        true
      })
  }

  test("a micro-batch's aggregation opens its state store with the run's Hadoop conf, for its restore step too: no broadcast of its own") {
    val (bids, counts) = twoAggregations()
    // broadcasts made while building an operator's RDD (and its children's), from the ids
    // Spark gives broadcasts in turn
    def broadcastsBuilding(p: SparkPlan): Long = {
      val before = spark.sparkContext.broadcast(0).id
      p.clone().execute()
      spark.sparkContext.broadcast(0).id - before - 1
    }
    testStream(counts, OutputMode.Append())(
      AddData(bids, bid(1, 100, 5.0), bid(2, 100, 3.0), closeBids(1)),
      CheckNewAnswer((1L, 1L)),
      AddData(bids, bid(2, 101, 4.0), closeBids(2)),
      CheckNewAnswer((2L, 1L)),
      AssertOnQuery("each aggregation's own RDD broadcasts nothing, nor does its restore step (from Spark 4.2; before, Spark's RDDs do)") { q =>
        val execs = q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }
        assert(execs.size == 2)
        // Spark 4.0 and 4.1: the restore step is Spark's, and so is the RDD the operator opens its
        // store with (Spark's read-store RDD is internal there): each broadcasts the conf again
        val sparks4041 = Seq("4.0.", "4.1.").exists(org.apache.spark.SPARK_VERSION.startsWith)
        def sparkBuilt(p: SparkPlan): Long = if (!sparks4041) 0L else p.collect {
          case r: StateStoreRestoreExec => r
          case a: PunctuatedAggregateExec => a
        }.size.toLong
        execs.foreach { e =>
          val restore = e.collect { case r: PunctuatedRestoreExec if r.stateInfo == e.stateInfo => r }
          assert(restore.size == (if (sparks4041) 0 else 1), e.treeString)
          restore.foreach(r => assert(r.getTagValue(HadoopConfPerRun.Tag) == e.getTagValue(HadoopConfPerRun.Tag)))
          // (the second aggregation's subtree holds the first: its RDDs are built too)
          assert(broadcastsBuilding(e.child) == sparkBuilt(e.child), e.child.treeString)
          assert(broadcastsBuilding(e) == sparkBuilt(e), e.treeString)
        }
        true
      },
      StopStream,
      StartStream(),
      AddData(bids, bid(3, 100, 1.0), bid(3, 100, 2.0), closeBids(3)),
      CheckNewAnswer((3L, 2L)))
  }
}
