package punctuated.join.multi

import java.nio.file.Files
import java.util.UUID

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.SparkPlan
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.types._

import punctuated.conf.PunctuatedConf
import punctuated.input.{InputSpec, KeyScheme}
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * [[PunctuatedMultiJoinExec]] run directly, one micro-batch after another on real state
 * stores (one cell; the planner's suites run it inside queries): the chain
 * `a(k) ⋈ b(k, v) ⋈ c(v)`, which a tree of binary joins cannot purge, drains to no state.
 */
class MultiJoinExecSuite extends PunctuatedStreamTest {

  private val aSchema = new StructType().add("pa", BooleanType).add("k", IntegerType)
  private val bSchema = new StructType().add("pb", BooleanType).add("bk", IntegerType)
    .add("bv", IntegerType).add("s", StringType)
  private val cSchema = new StructType().add("pc", BooleanType).add("v", IntegerType)

  private def plan(schema: StructType, rows: Seq[Row]): SparkPlan =
    spark.createDataFrame(rows.asJava, schema).coalesce(1).queryExecution.executedPlan

  /** Input `n` with key columns `keys` (ordinals), one single-column scheme per key column. */
  private def input(n: Int, child: SparkPlan, name: String, keys: Seq[Int], classes: Seq[Int]) = {
    val out = child.output
    val data = out.indices.filter(_ != 0).toArray
    val schemes = keys.zipWithIndex.map { case (o, pos) => Set(o) -> Option(KeyScheme(Array(pos))) }
    val spec = InputSpec(name, 0, data, schemes, keys.map(out(_).name), None, out.map(_.name), Array(0))
    MultiJoinInputSpec(n, spec, keys.map(out(_)), classes)
  }

  private class Chain(retention: Int = 0) {
    val dir: String = Files.createTempDirectory("punctuated-mjoin-exec").toFile.getCanonicalPath
    val runId: UUID = UUID.randomUUID()
    var version = 0L
    var last: PunctuatedMultiJoinExec = _

    def batch(a: Seq[Row], b: Seq[Row], c: Seq[Row]): Set[Row] = {
      val children = Seq(plan(aSchema, a), plan(bSchema, b), plan(cSchema, c))
      val inputs = IndexedSeq(input(0, children(0), "a", Seq(1), Seq(0)),
        input(1, children(1), "b", Seq(1, 2), Seq(0, 1)), input(2, children(2), "c", Seq(1), Seq(1)))
      val projection: Seq[Attribute] = Seq(children(0).output(1), children(1).output(3), children(2).output(1))
      spark.conf.set(PunctuatedConf.PunctuationRetention, retention.toString)
      last = PunctuatedMultiJoinExec(inputs, Seq(IntegerType, IntegerType), None, projection,
        Some(StatefulOperatorStateInfo(dir, runId, 0, version, 1)), PunctuatedConf(spark.sessionState.conf),
        Seq(1, 1), children)
      version += 1
      val types = projection.map(_.dataType)
      last.execute().map(r => Row.fromSeq(types.indices.map(i => if (r.isNullAt(i)) null else r.get(i, types(i)) match {
        case s: org.apache.spark.unsafe.types.UTF8String => s.toString
        case x => x
      }))).collect().toSet
    }
    def metric(name: String): Long = last.metrics(name).value
    def rows: Long = metric("numTotalStateRows")
    def held: Long = metric("numPunctuationsHeld")
  }

  private def a(k: Int) = Row(false, k)
  private def b(k: Int, v: Int, s: String) = Row(false, k, v, s)
  private def c(v: Int) = Row(false, v)
  private def aPunct(k: Int) = Row(true, k)
  private def bOnK(k: Int) = Row(true, k, null, null)
  private def bOnV(v: Int) = Row(true, null, v, null)
  private def cPunct(v: Int) = Row(true, v)

  test("chain: results of every arrival order, chained purge, no state once all is punctuated") {
    spark.streams.active
    val q = new Chain()
    // batch 0: rows in input order: c(7) joins b(1, 7) and, through it, a(1)
    assert(q.batch(Seq(a(1)), Seq(b(1, 7, "x")), Seq(c(7))) == Set(Row(1, "x", 7)))
    assert(q.rows == 3 && q.held == 0)
    // batch 1: a row of b joins both stored partners; a(2) has none yet
    assert(q.batch(Seq(a(2)), Seq(b(1, 7, "y")), Nil) == Set(Row(1, "y", 7)))
    assert(q.rows == 5)
    // batch 2: b closes k = 1, c closes v = 7: a(1) can meet no future result
    assert(q.batch(Nil, Seq(bOnK(1)), Seq(cPunct(7))) == Set())
    assert(q.rows == 4, "a(1) purged: b closed k = 1 and c closed v = 7")
    assert(q.metric("numRowsPurged") == 1 && q.metric("numPunctuationsReceived") == 2)
    // batch 3: late rows of b and c are dropped
    assert(q.batch(Nil, Seq(b(1, 9, "late")), Seq(c(7))) == Set())
    assert(q.metric("numLateRowsDropped") == 2)
    // batch 4: a closes 1, b closes v = 7: b's rows and c(7) go
    assert(q.batch(Seq(aPunct(1)), Seq(bOnV(7)), Nil) == Set())
    assert(q.rows == 1, "only a(2) is left")
    // batch 5: a(2)'s key closed by b, no b row with k = 2: a(2) goes
    assert(q.batch(Seq(aPunct(2)), Seq(bOnK(2)), Nil) == Set())
    assert(q.rows == 0 && q.held == 0, s"rows ${q.rows}, held ${q.held}")
  }

  test("punctuationRetention: punctuations no longer needed stay held that many batches, then go; late rows still caught") {
    spark.streams.active
    val q = new Chain(retention = 1)
    q.batch(Seq(a(1)), Seq(b(1, 7, "x")), Seq(c(7)))
    assert(q.batch(Seq(aPunct(1)), Seq(bOnK(1), bOnV(7)), Seq(cPunct(7))) == Set())
    assert(q.rows == 0 && q.held == 4, s"a: k, b: k and v, c: v still held (held ${q.held})")
    q.batch(Nil, Nil, Nil)
    assert(q.held == 0)
    q.batch(Seq(a(1)), Nil, Nil)           // remembered after the release: late
    assert(q.metric("numLateRowsDropped") == 1 && q.rows == 0)
  }

  test("a new row meets rows stored earlier in the same batch, once per result") {
    spark.streams.active
    val q = new Chain()
    val out = q.batch(Seq(a(1), a(1)), Seq(b(1, 7, "x"), b(1, 8, "y")), Seq(c(7), c(8), c(7)))
    assert(out == Set(Row(1, "x", 7), Row(1, "y", 8)))   // a set: the count is checked below
    assert(q.metric("numOutputRows") == 2 * 1 * 2 + 2 * 1 * 1)
    assert(q.rows == 2 + 2 + 3)
  }
}

class MultiJoinExecRocksDBSuite extends MultiJoinExecSuite with OnRocksDB
