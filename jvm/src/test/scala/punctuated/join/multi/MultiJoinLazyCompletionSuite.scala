package punctuated.join.multi

import org.apache.spark.sql.DataFrame
import punctuated.compat.{MemoryStream, StreamingQueryWrapper}
import org.apache.spark.sql.internal.SQLConf

import punctuated.checkpoint.MigrationRequests
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Lazy per-key completion of a migrated plan's new nodes (`jisc`, [[MultiJoinCompletion]]),
 * scripted at one partition so that every counter is exact: a run-time `migrate` leaves the
 * new node incomplete (`numIncompleteStates`), each probe of an unmarked class value
 * completes it once (`numKeysCompleted`; a second probe finds the mark, also after a restart
 * in the middle of the migration), the node is complete once its pending values are, and a
 * second migration before the first completes keeps the marks of the node both plans have
 * (§4.5), and `moving_state` after a restart completes at its switch what `jisc` left
 * incomplete. Output exactly once throughout; everything punctuated leaves no state.
 * [[MultiJoinLazyCompletionRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinLazyCompletionSuite extends PunctuatedStreamTest with XYRows {
  import testImplicits._


  private def stream(name: String, schemes: String): (MemoryStream[XY], DataFrame) = {
    val s = MemoryStream[XY]
    (s, declare(s.toDF().selectExpr(s"x AS ${name}_x", s"y AS ${name}_y", s"p AS ${name}_p"), name,
      Schemes -> schemes.split(";").map(c => s"${name}_${c.trim}").mkString("; "), Marker -> s"${name}_p"))
  }

  /** The last batch's migration counters and stored rows (inputs and nodes). */
  private def Counters(migrations: Long, incomplete: Long, keys: Long, rows: Long) =
    AssertOnQuery(s"$migrations migration(s), $incomplete incomplete, $keys key(s) completed, $rows rows") { q =>
      val p = settledProgress(q).stateOperators.filter(_.operatorName == "punctuatedMultiJoin").head
      assert(p.customMetrics.get(MultiJoinMigration.NumMigrations) == migrations, p.json)
      assert(p.customMetrics.get(MultiJoinMigration.NumIncompleteStates) == incomplete, p.json)
      assert(p.customMetrics.get(MultiJoinMigration.NumKeysCompleted) == keys, p.json)
      assert(p.numRowsTotal == rows, p.json)
      true
    }

  private def Migrate(plan: String) = Execute(s"migrate to $plan") { q => MigrationRequests.request(new StreamingQueryWrapper(q), plan) }

  private def settings(body: => Unit): Unit = withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1",
    PunctuatedConf.SafetyMode -> "warn", PunctuatedConf.MigrationStrategy -> "jisc", PunctuatedConf.JoinPlan -> "mjoin") {
    body
  }

  test("jisc: a run-time migration completes (class, value) keys when probed, across a restart in the middle") {
    withTempDir { dir =>
      settings {
        // a(x) ⋈ b(x, y) ⋈ c(x): a.x = b.x, b.y = c.x
        val (a, da) = stream("a", "x")
        val (b, db) = stream("b", "x; y")
        val (c, dc) = stream("c", "x")
        val joined = da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x"))
          .select("a_x", "a_y", "b_x", "b_y", "c_x", "c_y")
        val cp = dir.getCanonicalPath
        testStream(joined)(
          StartStream(checkpointLocation = cp),
          MultiAddData(a -> Seq(xy(1, 100), xy(2, 101)), b -> Seq(xy(1, 7), xy(2, 8), xy(3, 9)), c -> Nil),
          CheckNewAnswer(),
          Migrate("((a ⋈ b) ⋈ c)"),
          // the switch: {a, b} starts incomplete, pending b's y values 7, 8, 9; nothing probes it
          MultiAddData(a -> Seq(xy(4, 102)), b -> Nil, c -> Nil),
          CheckNewAnswer(),
          Counters(migrations = 1, incomplete = 1, keys = 0, rows = 6),
          // c(7) probes {a, b} by y = 7: completed (a(1) ⋈ b(1, 7) added), then joined
          MultiAddData(a -> Nil, b -> Nil, c -> Seq(xy(7, 200))),
          CheckNewAnswer((1L, 100L, 1L, 7L, 7L, 200L)),
          Counters(migrations = 0, incomplete = 1, keys = 1, rows = 8),
          StopStream,
          StartStream(checkpointLocation = cp),
          // (y, 7) is marked in the checkpoint: c(7) again completes nothing; c(8) completes y = 8
          MultiAddData(a -> Nil, b -> Nil, c -> Seq(xy(7, 201), xy(8, 202))),
          CheckNewAnswer((1L, 100L, 1L, 7L, 7L, 201L), (2L, 101L, 2L, 8L, 8L, 202L)),
          Counters(migrations = 0, incomplete = 1, keys = 1, rows = 11),
          // y = 9, the last pending value: {a, b} is complete (b(3, 9) has no a yet)
          MultiAddData(a -> Nil, b -> Nil, c -> Seq(xy(9, 203))),
          CheckNewAnswer(),
          Counters(migrations = 0, incomplete = 0, keys = 1, rows = 12),
          // a complete node: a(3)'s delta stores a(3) ⋈ b(3, 9) and meets c(9)
          MultiAddData(a -> Seq(xy(3, 104)), b -> Nil, c -> Nil),
          CheckNewAnswer((3L, 104L, 3L, 9L, 9L, 203L)),
          Counters(migrations = 0, incomplete = 0, keys = 0, rows = 14),
          MultiAddData(a -> (1L to 4L).map(onX), b -> ((1L to 4L).map(onX) ++ (7L to 9L).map(onY)),
            c -> (7L to 9L).map(onX)),
          CheckNewAnswer(),
          Counters(migrations = 0, incomplete = 0, keys = 0, rows = 0))
      }
    }
  }

  test("jisc: overlapping migrations keep the marks of the node both plans have") {
    withTempDir { dir =>
      settings {
        // a(x) ⋈ b(x, y) ⋈ c(x, y) ⋈ d(x): a.x = b.x, b.y = c.x, c.y = d.x
        val (a, da) = stream("a", "x")
        val (b, db) = stream("b", "x; y")
        val (c, dc) = stream("c", "x; y")
        val (d, dd) = stream("d", "x")
        val joined = da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x"))
          .join(dd, dc("c_y") === dd("d_x")).select("a_x", "b_x", "b_y", "c_x", "c_y", "d_x")
        val cp = dir.getCanonicalPath
        testStream(joined)(
          StartStream(checkpointLocation = cp),
          MultiAddData(a -> Seq(xy(1, 0)), b -> Seq(xy(1, 7)), c -> Seq(xy(7, 50), xy(7, 51)), d -> Nil),
          CheckNewAnswer(),
          Migrate("(((a ⋈ b) ⋈ c) ⋈ d)"),
          // {a, b} and {a, b, c} start incomplete
          MultiAddData(a -> Seq(xy(9, 0)), b -> Nil, c -> Nil, d -> Nil),
          CheckNewAnswer(),
          Counters(migrations = 1, incomplete = 2, keys = 0, rows = 5),
          Migrate("((a ⋈ b) ⋈ (c ⋈ d))"),
          // {a, b} stays incomplete, {a, b, c} goes, {c, d} starts incomplete; d(50)'s delta stores
          // c(7, 50) ⋈ d(50) and probes {a, b} by y = 7: completed -> one result, {a, b} complete
          MultiAddData(a -> Nil, b -> Nil, c -> Nil, d -> Seq(xy(50, 0))),
          CheckNewAnswer((1L, 1L, 7L, 7L, 50L, 50L)),
          Counters(migrations = 1, incomplete = 1, keys = 1, rows = 8),
          // a second b(1, 7): its delta probes {c, d} by y = 7: completed, nothing added (c(7, 50) ⋈ d(50)
          // is there already): the result once, no incomplete node left
          MultiAddData(a -> Nil, b -> Seq(xy(1, 7)), c -> Nil, d -> Nil),
          CheckNewAnswer((1L, 1L, 7L, 7L, 50L, 50L)),
          Counters(migrations = 0, incomplete = 0, keys = 1, rows = 10),
          MultiAddData(a -> Seq(onX(1), onX(9)), b -> Seq(onX(1), onX(9), onY(7)), c -> Seq(onX(7), onY(50), onY(51)),
            d -> Seq(onX(50), onX(51))),
          CheckNewAnswer(),
          Counters(migrations = 0, incomplete = 0, keys = 0, rows = 0))
      }
    }
  }

  test("moving_state over a node a jisc migration left incomplete completes it at the switch, after a restart") {
    withTempDir { dir =>
      settings {
        val (a, da) = stream("a", "x")
        val (b, db) = stream("b", "x; y")
        val (c, dc) = stream("c", "x; y")
        val (d, dd) = stream("d", "x")
        val joined = da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x"))
          .join(dd, dc("c_y") === dd("d_x")).select("a_x", "b_x", "b_y", "c_x", "c_y", "d_x")
        val cp = dir.getCanonicalPath
        testStream(joined)(
          StartStream(checkpointLocation = cp),
          MultiAddData(a -> Seq(xy(1, 0)), b -> Seq(xy(1, 7)), c -> Seq(xy(7, 50), xy(7, 51)), d -> Nil),
          CheckNewAnswer(),
          Migrate("(((a ⋈ b) ⋈ c) ⋈ d)"),
          MultiAddData(a -> Seq(xy(9, 0)), b -> Nil, c -> Nil, d -> Nil),
          CheckNewAnswer(),
          Counters(migrations = 1, incomplete = 2, keys = 0, rows = 5),
          StopStream,
          StartStream(checkpointLocation = cp, additionalConfs = Map(PunctuatedConf.MigrationStrategy -> "moving_state")),
          Migrate("((a ⋈ b) ⋈ (c ⋈ d))"),
          // the switch completes {a, b} (kept, incomplete: y = 7) and the new {c, d} (y = 7, no d yet)
          // before the batch's rows; d(50)'s delta then stores c(7, 50) ⋈ d(50) and meets a(1) ⋈ b(1, 7)
          MultiAddData(a -> Nil, b -> Nil, c -> Nil, d -> Seq(xy(50, 0))),
          CheckNewAnswer((1L, 1L, 7L, 7L, 50L, 50L)),
          Counters(migrations = 1, incomplete = 0, keys = 2, rows = 8),
          MultiAddData(a -> Nil, b -> Seq(xy(1, 7)), c -> Nil, d -> Nil),
          CheckNewAnswer((1L, 1L, 7L, 7L, 50L, 50L)),
          Counters(migrations = 0, incomplete = 0, keys = 0, rows = 10),
          MultiAddData(a -> Seq(onX(1), onX(9)), b -> Seq(onX(1), onX(9), onY(7)), c -> Seq(onX(7), onY(50), onY(51)),
            d -> Seq(onX(50), onX(51))),
          CheckNewAnswer(),
          Counters(migrations = 0, incomplete = 0, keys = 0, rows = 0))
      }
    }
  }
}

/** [[MultiJoinLazyCompletionSuite]] on RocksDB state stores. */
class MultiJoinLazyCompletionRocksDBSuite extends MultiJoinLazyCompletionSuite with OnRocksDB
