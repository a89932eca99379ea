package punctuated.state

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import punctuated.input.KeyScheme

/**
 * [[RangeBounds.keyCoverer]] — a bound fixed, compared as primitives where the type allows —
 * answers exactly as [[RangeBounds.coversKey]] (the ordering), over random keys and bounds of
 * every type it specialises (and one it does not), NULLs included, in both directions; and a
 * bound as held (read back from its bytes) behaves as the one given.
 */
class RangeBoundsCovererSuite extends AnyFunSuite {

  private val window = new StructType().add("start", TimestampType).add("end", TimestampType)
  private val mixed = new StructType().add("day", DateType).add("seq", LongType)
  private val types: Seq[DataType] =
    Seq(LongType, TimestampType, TimestampNTZType, IntegerType, DateType, window, mixed, StringType)

  private def value(t: DataType, rnd: Random): Any = if (rnd.nextInt(8) == 0) null else t match {
    case LongType | TimestampType | TimestampNTZType => (rnd.nextInt(7) - 3).toLong
    case IntegerType | DateType => rnd.nextInt(7) - 3
    case st: StructType => InternalRow.fromSeq(st.fields.toSeq.map(f => value(f.dataType, rnd)))
    case StringType => UTF8String.fromString(rnd.nextInt(7).toString)
  }

  for (t <- types; atLeast <- Seq(false, true)) {
    test(s"keyCoverer agrees with coversKey: $t, ${if (atLeast) ">=" else "<="}") {
      val keySchema = new StructType().add("auction", LongType).add("v", t)
      val bounds = RangeBounds(KeyScheme(Array(0), Vector(1 -> atLeast)), keySchema)
      val toKey = UnsafeProjection.create(keySchema)
      val rnd = new Random(t.hashCode + (if (atLeast) 1 else 0))
      var compared = 0
      var covered = 0
      (1 to 60).foreach { _ =>
        val boundKey = toKey(new GenericInternalRow(Array[Any](1L, value(t, rnd)))).copy()
        if (!boundKey.isNullAt(1)) {
          val given = bounds.boundOf(boundKey)
          val held = bounds.fromBytes(bounds.toBytes(given))
          Seq(given, held).foreach { bound =>
            val fast = bounds.keyCoverer(bound)
            (1 to 40).foreach { _ =>
              val key = toKey(new GenericInternalRow(Array[Any](rnd.nextLong(), value(t, rnd))))
              val expected = bounds.coversKey(bound, key)
              assert(fast(key) == expected, s"bound $bound, key ${key.get(1, t)}")
              compared += 1
              if (expected) covered += 1
            }
          }
        }
      }
      // both answers came up often
      assert(compared > 2000 && covered > compared / 10 && covered < compared * 9 / 10)
    }
  }
}
