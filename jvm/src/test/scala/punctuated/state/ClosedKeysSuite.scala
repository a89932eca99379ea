package punctuated.state

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import punctuated.input.KeyScheme

/** [[ClosedKeys]]: the Spark side of the closed-values summaries (no session needed). */
class ClosedKeysSuite extends AnyFunSuite {

  private def row(schema: StructType, values: Any*) =
    UnsafeProjection.create(schema)(new GenericInternalRow(values.toArray)).copy()

  test("the partition of a value is the one Spark's hash partitioning gives it") {
    for (t <- Seq(ByteType, ShortType, IntegerType, LongType, DateType, TimestampType); n <- Seq(2, 7, 200)) {
      val partitioning = HashPartitioning(Seq(BoundReference(0, t, nullable = true)), n)
      val expr = partitioning.partitionIdExpression
      for (v <- -300L to 300L) {
        val internal: Any = t match {
          case ByteType => v.toByte
          case ShortType => v.toShort
          case IntegerType | DateType => v.toInt
          case _ => v
        }
        if (t != ByteType || v.toByte == v) {
          assert(ClosedKeys.partitionOf(v, t, n) == expr.eval(new GenericInternalRow(Array[Any](internal))),
            s"$t $v $n")
        }
      }
    }
  }

  test("a whole single-column key: one interval per partition, stored and read back") {
    val key = new StructType().add("id", LongType)
    val scheme = KeyScheme(Array(0))
    val mine = (1L to 100L).filter(v => ClosedKeys.partitionOf(v, LongType, 4) == 1)
    val c = new ClosedKeys(scheme, key, limit = 10, partition = (1, 4), stored = None)
    mine.foreach(v => c.add(row(new StructType().add("id", LongType), v), None))
    assert(c.size == 1 && c.dirty)
    val back = new ClosedKeys(scheme, key, limit = 10, partition = (1, 4), stored = Some(c.toBytes))
    assert(back.size == 1 && !back.dirty)
    mine.foreach(v => assert(back.covers(row(key, v))))
    // values of other partitions inside the interval are not reported covered
    (1L to 100L).filterNot(mine.contains).foreach(v => assert(!back.covers(row(key, v))))
    assert(!back.covers(row(key, null)))
  }

  test("other schemes: closed constants with their highest bound, stored and read back") {
    val key = new StructType().add("sensor", StringType).add("day", DateType)
    val scheme = KeyScheme.atMost(Array(0), 1)
    val c = new ClosedKeys(scheme, key, limit = 10, partition = (0, 2), stored = None)
    val s1 = row(new StructType().add("sensor", StringType), UTF8String.fromString("s1"))
    c.add(s1, Some(10))
    c.add(s1, Some(12))
    val back = new ClosedKeys(scheme, key, limit = 10, partition = (0, 2), stored = Some(c.toBytes))
    assert(back.size == 1)
    assert(back.covers(row(key, UTF8String.fromString("s1"), 12)))
    assert(!back.covers(row(key, UTF8String.fromString("s1"), 13)))
    assert(!back.covers(row(key, UTF8String.fromString("s2"), 1)))
    assert(!back.covers(row(key, UTF8String.fromString("s1"), null)))
  }
}
