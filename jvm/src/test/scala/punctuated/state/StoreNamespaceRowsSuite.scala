package punctuated.state

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.types.{BinaryType, IntegerType}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The shared store's key, value and prefix rows, written directly, are byte for byte the rows
 * the generated projections wrote before (checkpoints hold them: a restart must find its
 * keys), whatever the length of the bytes, and a reused writer leaves nothing of a longer row.
 */
class StoreNamespaceRowsSuite extends AnyFunSuite {
  private val keyProj = UnsafeProjection.create(Seq(
    BoundReference(0, IntegerType, nullable = false), BoundReference(1, BinaryType, nullable = false)))
  private val valueProj = UnsafeProjection.create(Seq(BoundReference(0, BinaryType, nullable = false)))
  private val prefixProj = UnsafeProjection.create(Seq(BoundReference(0, IntegerType, nullable = false)))

  test("key, value and prefix rows equal the projections' rows, with a writer reused from longer to shorter") {
    val keys = new UnsafeRowWriter(2, 64)
    val values = new UnsafeRowWriter(1, 64)
    for (n <- Seq(40, 17, 8, 3, 0, 64, 1); id <- Seq(0, 7, 1001, -1)) {
      val bytes = Array.tabulate[Byte](n)(i => (i * 31 + n).toByte)
      val expectedKey = keyProj(new GenericInternalRow(Array[Any](id, bytes)))
      assert(StoreNamespace.keyRow(keys, id, bytes) == expectedKey, s"key ($id, $n bytes)")
      assert(StoreNamespace.keyRow(keys, id, bytes).getBytes.sameElements(expectedKey.getBytes))
      val expectedValue = valueProj(new GenericInternalRow(Array[Any](bytes)))
      assert(StoreNamespace.valueRow(values, bytes).getBytes.sameElements(expectedValue.getBytes), s"value ($n bytes)")
      assert(StoreNamespace.intRow(id).getBytes.sameElements(
        prefixProj(new GenericInternalRow(Array[Any](id))).getBytes), s"prefix $id")
    }
  }
}
