package punctuated.spark

import org.apache.spark.sql.SparkSessionExtensions

import punctuated.compat.{SparkCompat, SqlCompat}
import punctuated.spark.functions.TableFunctions
import punctuated.spark.rules._

/**
 * Punctuated's entry point: `spark.sql.extensions=punctuated.spark.PunctuatedExtensions`.
 *
 * A registry: one commented `inject*` per rule, each rule in its own file under
 * `punctuated.spark.rules`.
 */
class PunctuatedExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    // SQL of newer Spark minors the older ones lack (Spark 4.0: `FROM STREAM(t)`;
    // docs/spark-versions.md); nothing on 4.1 and later.
    SqlCompat.inject(extensions)

    // Reject bad punctuation declarations (table properties or with_schemes metadata) at
    // analysis, naming table, property and offending text.
    extensions.injectCheckRule(ValidateDeclarations)

    // At start() of a restarted query: refuse state written by the other engine (ours under
    // Spark's own operator once declarations are removed, Spark's join under ours once they
    // are added), before Spark plans the first micro-batch.
    extensions.injectCheckRule(CheckCheckpointOwners)

    // At start(), before Spark's output-mode check: by spark.punctuated.safety.mode, fail
    // (strict) or warn when some join, aggregation or deduplication state of a query reading
    // declared streams could never be purged.
    extensions.injectHintResolutionRule(CheckJoinSafety)

    // FROM a, b WHERE a.k = b.k: equalities between two streams of inner stream-stream joins
    // become the joins' conditions (same query), so that the next rule can mark them.
    extensions.injectPostHocResolutionRule(MoveWhereEqualitiesIntoJoins)

    // A band-only join (a time band, no equality predicate) reading a declared stream becomes
    // an equi-join on time buckets (one input copied into the buckets its band covers), so
    // that the next rule marks it as a punctuated band join. Same result.
    extensions.injectPostHocResolutionRule(BucketBandOnlyJoins)

    // Mark stream-stream equi-joins with a declared input as punctuated joins: the mark keeps
    // each input's marker column alive through column pruning and carries the declarations
    // to the physical plan; a punctuated join's output is a punctuated input of the join above.
    // Runs once, after resolution, before Spark's streaming checks.
    extensions.injectPostHocResolutionRule(PunctuateStreamingJoins)

    // Mark streaming dropDuplicates / DISTINCT / UNION over input whose punctuations close keys
    // as punctuated deduplications: seen keys are forgotten once punctuated.
    extensions.injectPostHocResolutionRule(PunctuateStreamingDeduplicates)

    // Mark streaming GROUP BYs over input whose punctuations close groups as punctuated
    // aggregations: append mode without a watermark, each group emitted once closed.
    extensions.injectPostHocResolutionRule(PunctuateStreamingAggregates)

    // At start(): punctuation rows no punctuated operator consumes are removed where their
    // stream enters the plan, so they never reach another operator or the sink.
    extensions.injectPostHocResolutionRule(DropUnconsumedPunctuations)

    // At start(): an aggregation whose output punctuations nothing uses keeps its final rows
    // only, in the plan every micro-batch re-optimizes (less for Spark's optimizer to go over).
    extensions.injectPostHocResolutionRule(DropUnusedPunctuationOutputs)

    // At start(), after Spark's output-mode check: the event-time flags that let it pass are
    // dropped and filters let punctuation rows through once, not in every micro-batch's optimizer.
    extensions.injectPostHocResolutionRule(ApplyPerBatchRewritesAtStart)

    // Batch reads (not streams) of a declared catalog table leave its punctuation rows out, so
    // batch answers are the streaming ones (spark.punctuated.batch.includePunctuations=true keeps them).
    extensions.injectPostHocResolutionRule(DropPunctuationsFromBatchReads)

    // Per micro-batch, first: drop the copies of a join's punctuation mark that Spark's
    // constraint propagation adds (their columns are not the declared ones).
    extensions.injectOptimizerRule(_ => DropCopiedPunctuationMarks)

    // Per micro-batch: undo the event-time flags that let punctuated outer joins and
    // append-mode aggregations pass Spark's start-time checks (no watermark is involved);
    // a started query's plan has none left (ApplyPerBatchRewritesAtStart), EXPLAIN's has.
    extensions.injectOptimizerRule(DropOuterJoinCheckFlag)

    // Per micro-batch: filters between a declared source and a punctuated join or aggregation let
    // punctuation rows through (select passes punctuations).
    extensions.injectOptimizerRule(PassPunctuationsThroughFilters)

    // Per micro-batch, after Spark's operator optimizations: the stream columns a filter reads
    // (put in at start so that Spark's column pruning leaves that part of the plan alone in
    // every pass) become an ordinary projection again, before physical planning.
    extensions.injectPreCBORule(ReplaceStreamColumnsWithProjections)

    // Per micro-batch: find the groups of three or more inner joins that run as one multi-way
    // join (spark.punctuated.join.plan) and stamp each member join's mark with its group.
    extensions.injectOptimizerRule(MarkMultiWayJoins)

    // Per micro-batch: run each stamped group of joins as one multi-way join, its inputs routed
    // to hypercube cells (before the next rule plans the remaining joins one by one).
    extensions.injectColumnar(s => SparkCompat.columnar(PlanPunctuatedMultiJoins(s)))

    // Per micro-batch: run marked joins with the punctuation-purging symmetric hash join,
    // keeping the state location Spark's incremental planner assigned.
    extensions.injectColumnar(s => SparkCompat.columnar(PlanPunctuatedJoins(s)))

    // Per micro-batch: run the state-store step of punctuated aggregations with the
    // punctuation-closing operator (Spark's aggregation operators do the rest).
    extensions.injectColumnar(s => SparkCompat.columnar(PlanPunctuatedAggregates(s)))

    // Per micro-batch: run punctuated deduplications with the punctuation-purging operator.
    extensions.injectColumnar(s => SparkCompat.columnar(PlanPunctuatedDeduplicates(s)))

    // SQL table functions answering what Python asks through Py4J, for clients without it (Spark
    // Connect, spark-sql, JDBC): declarations, the query document, the start-time safety verdict,
    // a running query's join plan, and a request for another one (docs/connect.md).
    extensions.injectTableFunction(TableFunctions.declarations)
    extensions.injectTableFunction(TableFunctions.describe)
    extensions.injectTableFunction(TableFunctions.checkSafety)
    extensions.injectTableFunction(TableFunctions.joinPlan)
    extensions.injectTableFunction(TableFunctions.migrate)
  }
}
