package punctuated.checkpoint

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.errors.PunctuatedErrors
import punctuated.join.PunctuatedSymmetricHashJoinExec
import punctuated.spark.PunctuatedStreamTest

/** A row of [[MultiJoinCheckpointSuite]]'s streams: two columns and the marker. */
case class KV2(k: Option[Long], v: Option[Long], is_punct: Boolean = false)

/**
 * A multi-way join in the checkpoint: restarts across join plans (a tree of binary joins
 * against one multi-way join) are refused at `start()` before any state file changes,
 * naming `spark.punctuated.join.plan` and the value that continues the state; the same plan
 * continues. HDFS-backed state store; [[MultiJoinCheckpointRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinCheckpointSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def row(k: Long, v: Long) = KV2(Some(k), Some(v))
  private def closeK(k: Long) = KV2(Some(k), None, is_punct = true)
  private def closeV(v: Long) = KV2(None, Some(v), is_punct = true)

  private def newCheckpoint(): String = Files.createTempDirectory("punctuated-mjoin-ckpt").toFile.getCanonicalPath

  /** Every file of the operators' state directories, with its length. */
  private def stateFiles(checkpoint: String): Map[String, Long] = {
    val dir = new File(checkpoint, "state")
    def walk(f: File): Seq[File] = if (f.isDirectory) f.listFiles().toSeq.flatMap(walk) else Seq(f)
    walk(dir).map(f => dir.toPath.relativize(f.toPath).toString -> f.length()).toMap
  }

  private def stream(s: MemoryStream[KV2], name: String, k: String, v: String, schemes: String) =
    declare(s.toDF().selectExpr(s"k AS $k", s"v AS $v", s"is_punct AS ${name}_p"), name,
      Schemes -> schemes, Marker -> s"${name}_p")

  /** a(k, x) ⋈ b(k, y) ⋈ c(k, z) on k: a star, safe as a tree of binary joins and as one multi-way join. */
  private def star() = {
    val (a, b, c) = (MemoryStream[KV2], MemoryStream[KV2], MemoryStream[KV2])
    val (da, db, dc) = (stream(a, "a", "a_k", "a_x", "a_k"), stream(b, "b", "b_k", "b_y", "b_k"),
      stream(c, "c", "c_k", "c_z", "c_k"))
    val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_k") === dc("c_k"))
      .select(da("a_k"), da("a_x"), db("b_y"), dc("c_z"))
    (a, b, c, joined)
  }

  private def refusal(e: Throwable, mentions: String*): Unit = {
    val a = e match {
      case a: AnalysisException => a
      case other => Option(other.getCause).collect { case a: AnalysisException => a }.getOrElse(throw other)
    }
    assert(a.getCondition == PunctuatedErrors.IncompatibleCheckpoint, a.getMessage)
    (mentions :+ "new checkpoint location").foreach(m => assert(a.getMessage.contains(m), s"'$m' in ${a.getMessage}"))
  }

  private def start(df: DataFrame, checkpoint: String) =
    df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()

  test("a tree of binary joins' checkpoint under the multi-way plan: refused at start(), nothing written; written continues") {
    val checkpoint = newCheckpoint()
    val (a, b, c, joined) = star()
    withSQLConf(PunctuatedConf.JoinPlan -> "written") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 10), row(2, 20)), AddData(b, row(1, 11)), AddData(c, row(1, 12)),
        CheckNewAnswer((1L, 10L, 11L, 12L)),
        AssertOnQuery("two binary joins") { q =>
          q.lastExecution.executedPlan.collect { case j: PunctuatedSymmetricHashJoinExec => j }.size == 2
        },
        StopStream)
    }
    val before = stateFiles(checkpoint)
    for (plan <- Seq("auto", "mjoin")) withSQLConf(PunctuatedConf.JoinPlan -> plan) {
      val e = intercept[Exception](start(joined, checkpoint))
      refusal(e, "written by a tree of binary punctuated joins (punctuatedSymmetricHashJoin)",
        s"now run as one multi-way join (spark.punctuated.join.plan=$plan)",
        "run the query with spark.punctuated.join.plan=written")
      assert(stateFiles(checkpoint) == before, "the refused run wrote state")
    }
    // the plan it was written with continues it, exactly once
    withSQLConf(PunctuatedConf.JoinPlan -> "written") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(b, row(2, 21)), AddData(c, row(2, 22), row(1, 13)),
        CheckNewAnswer((2L, 20L, 21L, 22L), (1L, 10L, 11L, 13L)),
        AddData(a, closeK(1), closeK(2)), AddData(b, closeK(1), closeK(2)), AddData(c, closeK(1), closeK(2)),
        CheckNewAnswer(),
        StopStream)
    }
  }
}

class MultiJoinCheckpointRocksDBSuite extends MultiJoinCheckpointSuite {
  override protected def sparkConf = super.sparkConf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
}
