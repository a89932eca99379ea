package punctuated.checkpoint

import org.scalatest.funsuite.AnyFunSuite

/**
 * The compatibility rules on records alone (the restarts themselves, with Spark, are in
 * [[CheckpointDeclarationsSuite]]): the auction join's records before and after a change.
 */
class CompatibilitySuite extends AnyFunSuite {

  private val auctions = InputRecord("left", "auctions", Some("is_punct"), Some("id"), Nil,
    purging = Seq(KeyedScheme("id", "0")), columns = Seq("id BIGINT", "seller BIGINT", "is_punct BOOLEAN"))
  private val bids = InputRecord("right", "bids", Some("is_punct"), None, Seq("auction"),
    purging = Seq(KeyedScheme("auction", "0")), columns = Seq("auction BIGINT", "price DOUBLE", "is_punct BOOLEAN"))
  private val stores = Seq("left-punctuated-rows", "right-punctuated-rows", "punctuated-meta")
  private val join = OperatorRecord("punctuatedSymmetricHashJoin", 1, stores, Seq(auctions, bids))

  test("the record survives its JSON form") {
    assert(OperatorRecord.fromJson(join.toJson) == join)
    val keyed = OperatorRecord("punctuatedAggregate", 1, Seq("default", "punctuations"),
      Seq(InputRecord("input 1", "readings", Some("is_punct"), None, Seq("hour<="))),
      Seq(KeyedScheme("hour<=", "0<=")))
    assert(OperatorRecord.fromJson(keyed.toJson) == keyed)
    // an aggregation hashed by part of its key; records before the field read as the whole key
    val prefixed = keyed.copy(partitionedBy = Some(Seq(0)))
    assert(prefixed.toJson.contains("\"partitionedBy\":[0]") && !keyed.toJson.contains("partitionedBy"))
    assert(OperatorRecord.fromJson(prefixed.toJson) == prefixed)
  }

  test("an aggregation's state hashed by other columns than the query would: refused") {
    val keyed = OperatorRecord("punctuatedAggregate", 1, Seq("default", "punctuations"),
      Seq(InputRecord("input 1", "readings", Some("is_punct"), None, Seq("sensor; ts<="))),
      Seq(KeyedScheme("sensor", "0"), KeyedScheme("ts<=", "1<=")), partitionedBy = Some(Seq(0)))
    assert(Compatibility.problems(keyed, keyed).isEmpty)
    val problems = Compatibility.problems(keyed, keyed.copy(partitionedBy = None))
    assert(problems.exists(p => p.contains("key positions 0") && p.contains("the whole key")), problems)
  }

  test("a record of a newer format is not read") {
    assert(intercept[IllegalArgumentException](
      OperatorRecord.fromJson(join.toJson.replace("\"formatVersion\":1", "\"formatVersion\":2")))
      .getMessage.contains("newer"))
  }

  test("unchanged, renamed, or with a scheme on other columns added: compatible") {
    assert(Compatibility.problems(join, join).isEmpty)
    val renamed = join.copy(inputs = Seq(auctions.copy(table = "auctions_v2"), bids.copy(schemes = Seq("auction", "bidder"))))
    assert(Compatibility.problems(join, renamed).isEmpty)
  }

  test("constant to range: the purging scheme is gone and the other input lacks the index") {
    val range = join.copy(inputs = Seq(auctions.copy(indexed = Seq(KeyedScheme("auction<=", "0<="))),
      bids.copy(schemes = Seq("auction<="), purging = Seq(KeyedScheme("auction<=", "0<=")))))
    val problems = Compatibility.problems(join, range)
    assert(problems.exists(_.contains("bids (right): scheme 'auction' no longer purges")), problems)
    assert(problems.exists(_.contains("auctions (left): the other input's scheme 'auction<=' needs a range index")),
      problems)
  }

  test("a scheme of two ranges recorded by its first range only (older records) is the same scheme") {
    val readings = InputRecord("right", "readings", Some("p"), None, Seq("day<=, level<="),
      purging = Seq(KeyedScheme("day<=, level<=", "0<=")), columns = Seq("day INT", "level INT", "p BOOLEAN"))
    val older = join.copy(inputs = Seq(auctions.copy(indexed = Seq(KeyedScheme("day<=, level<=", "0<="))), readings))
    val now = join.copy(inputs = Seq(auctions.copy(indexed = Seq(KeyedScheme("day<=, level<=", "0<=,1<="))),
      readings.copy(purging = Seq(KeyedScheme("day<=, level<=", "0<=,1<=")))))
    assert(Compatibility.problems(older, now).isEmpty)
    // a one-range scheme that became a two-range one is another scheme
    val oneRange = join.copy(inputs = Seq(auctions.copy(indexed = Seq(KeyedScheme("day<=", "0<="))),
      readings.copy(schemes = Seq("day<="), purging = Seq(KeyedScheme("day<=", "0<=")))))
    val problems = Compatibility.problems(oneRange, now)
    assert(problems.exists(_.contains("scheme 'day<=' no longer purges")), problems)
    // an aggregation's closing kinds, under a union too
    val kinds = OperatorRecord("punctuatedAggregate", 1, Seq("default"), Nil,
      Seq(KeyedScheme("day<=, level<=", "0<= branch 1")))
    val kindsNow = kinds.copy(kinds = Seq(KeyedScheme("day<=, level<=", "0<=,1<= branch 1")))
    assert(Compatibility.problems(kinds, kindsNow).isEmpty)
    assert(!Compatibility.sameScheme(KeyedScheme("day<=, level<=", "0<= branch 1"),
      KeyedScheme("day<=, level<=", "0<=,1<= branch 2")))
  }

  test("a store the checkpoint does not have: refused") {
    val before = join.copy(stores = stores.take(2), inputs = Seq(auctions.copy(unique = None, purging = Nil),
      bids.copy(purging = Nil)))
    val problems = Compatibility.problems(before, join)
    assert(problems.exists(_.contains("needs state store 'punctuated-meta'")), problems)
    // the unique key added is fine in itself (an added scheme): only the store is the problem
    assert(problems.size == 1, problems)
  }

  test("marker, unique key, stored columns, layout version") {
    def one(changed: OperatorRecord, text: String) = {
      val problems = Compatibility.problems(join, changed)
      assert(problems.exists(_.contains(text)), problems)
    }
    one(join.copy(inputs = Seq(auctions, bids.copy(marker = Some("is_end")))), "marker column 'is_punct' is now 'is_end'")
    one(join.copy(inputs = Seq(auctions, bids.copy(marker = None))), "marker column 'is_punct' is now (none)")
    one(join.copy(inputs = Seq(auctions.copy(unique = None), bids)), "unique key 'id' is now (none)")
    one(join.copy(inputs = Seq(auctions.copy(columns = auctions.columns.reverse), bids)), "stored rows would be misread")
    one(join.copy(layoutVersion = 2), "layout version 1")
  }

  test("closing schemes keep their numbers; new ones come after; the same text on another key is named by key") {
    val agg = OperatorRecord("punctuatedAggregate", 1, Seq("default", "punctuations"),
      Seq(InputRecord("input 1", "readings", Some("is_punct"), None, Seq("hour<="))), Seq(KeyedScheme("hour<=", "1<=")))
    val appended = agg.copy(kinds = agg.kinds :+ KeyedScheme("sensor", "0"))
    assert(Compatibility.problems(agg, appended).isEmpty)
    assert(Compatibility.problems(agg, appended.copy(kinds = appended.kinds.reverse))
      .exists(_.contains("closing scheme 1 was 'hour<=', now 'sensor'")))
    assert(Compatibility.problems(agg, agg.copy(kinds = Nil)).exists(_.contains("is gone")))
    assert(Compatibility.problems(appended, agg).exists(_.contains("closing scheme 2 'sensor' is gone")))
    val otherBranch = agg.copy(kinds = Seq(KeyedScheme("hour<=", "1<= branch 10")))
    assert(Compatibility.problems(agg, otherBranch).exists(_.contains("was 'hour<=' (1<=), now 'hour<=' (1<= branch 10)")))
  }
}
