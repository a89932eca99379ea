package punctuated.state

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, InterpretedUnsafeProjection, SpecializedGetters, UnsafeRow}
import org.apache.spark.sql.catalyst.util.{ArrayData, GenericArrayData}
import org.apache.spark.sql.types.{ArrayType, DataType, DateType, IntegerType, LongType, StructType, TimestampNTZType, TimestampType}

import punctuated.input.KeyScheme
import punctuated.model.RangeRegion

/**
 * How an operator compares the range part of one [[KeyScheme]]'s punctuations with keys, one
 * place for every operator that holds punctuations ([[HeldPunctuationTable]],
 * [[ClosedKeys]]): a key's *value* is what its range columns hold, a punctuation's *bound*
 * what it closes of them.
 *
 * {{{
 *   one range  (day<=)           value: the day          bound: the greatest day (a value)
 *   several    (day<=, price<=)  value: (day, price)     bound: a RangeRegion (its maximal corners)
 * }}}
 *
 * With one range a bound is the greatest value (the region of one corner, kept as the value
 * itself, so that held punctuations keep the layout checkpoints have always had); with more
 * it is the Pareto staircase of [[RangeRegion]] (Tucker et al. 2003, Table 1, setMatch).
 */
sealed trait RangeBounds extends punctuated.model.BoundOps[Any] {
  /** The key's range value(s), copied (a NULL range column: null, covered by nothing). */
  def valueOf(key: InternalRow): Any
  /** The same, not copied: valid while `key` is (look-ups, once per stored group or input row). */
  def peek(key: InternalRow): Any
  /** The bound a punctuation whose key is `key` (range columns set to its bounds) carries. */
  def boundOf(key: InternalRow): Any
  /** Does `bound` close `value`? */
  def covers(bound: Any, value: Any): Boolean
  /** Does `bound` close this key's range value(s)? (No copy: the hot path of look-ups.) */
  def coversKey(bound: Any, key: InternalRow): Boolean
  /**
   * [[coversKey]] with `bound` fixed, for a run of look-ups against one bound (a task's groups
   * against its held punctuation): the same answers, compared without boxing where the type
   * allows (see [[Single]]).
   */
  def keyCoverer(bound: Any): InternalRow => Boolean = key => coversKey(bound, key)
  /** Does `held` close everything `incoming` does? */
  def includes(held: Any, incoming: Any): Boolean
  /** What `held` and `incoming` close together. */
  def merge(held: Any, incoming: Any): Any
  /** What `a` and `b` both close, if anything (one range: the lower bound; several: the regions' intersection). */
  def intersect(a: Any, b: Any): Option[Any]
  /** The bound as stored (an UnsafeRow's bytes), and back. */
  def toBytes(bound: Any): Array[Byte]
  def fromBytes(bytes: Array[Byte]): Any
}

object RangeBounds {

  /** Types whose values are longs in a row (compared as such by [[Single.keyCoverer]]). */
  private[state] def isLongBacked(t: DataType): Boolean = t match {
    case LongType | TimestampType | TimestampNTZType => true
    case _ => false
  }
  /** Types whose values are ints in a row. */
  private[state] def isIntBacked(t: DataType): Boolean = t match {
    case IntegerType | DateType => true
    case _ => false
  }
  private[state] def isPrimitive(t: DataType): Boolean = isLongBacked(t) || isIntBacked(t)

  /** The bounds of `scheme` over keys of `keySchema` (the scheme must have a range). */
  def apply(scheme: KeyScheme, keySchema: StructType): RangeBounds = {
    scheme.ranges match {
      case Seq() => throw new IllegalArgumentException(s"$scheme has no range")
      // one range: the bound is the value itself (the layout checkpoints have always had)
      case Seq((position, atLeast)) => new Single(position, atLeast, keySchema)
      case several => new Region(several, keySchema)
    }
  }

  /** One range attribute: bounds are values, the greatest kept. */
  final class Single(position: Int, atLeast: Boolean, keySchema: StructType) extends RangeBounds {
    private val dataType = keySchema(position).dataType
    val ordering: Ordering[Any] = KeyScheme.ordering(dataType, atLeast)
    private val getter: (SpecializedGetters, Int) => Any = InternalRow.getAccessor(dataType, nullable = true)
    // made when a bound is first stored, interpreted: a task stores a few bounds a micro-batch,
    // too few to pay for generating (and looking up) a projection's code in every task
    private lazy val proj = InterpretedUnsafeProjection.createProjection(Seq(BoundReference(0, dataType, nullable = true)))

    override def valueOf(key: InternalRow): Any =
      if (key.isNullAt(position)) null else InternalRow.copyValue(getter(key, position))
    override def peek(key: InternalRow): Any = if (key.isNullAt(position)) null else getter(key, position)
    override def boundOf(key: InternalRow): Any = valueOf(key)
    override def covers(bound: Any, value: Any): Boolean = value != null && ordering.lteq(value, bound)
    override def coversKey(bound: Any, key: InternalRow): Boolean =
      !key.isNullAt(position) && ordering.lteq(getter(key, position), bound)
    /**
     * Long-backed values (bigint, timestamps), int-backed ones (int, date) and structs of them
     * (a `window`: start, then end) compared as primitives; a struct with a NULL field, and
     * other types, by the ordering.
     */
    override def keyCoverer(bound: Any): InternalRow => Boolean = {
      val generic: InternalRow => Boolean = key => coversKey(bound, key)
      val sign = if (atLeast) -1 else 1   // covered: sign * compare(value, bound) <= 0
      (dataType, bound) match {
        case (_, null) => _ => false
        case (t, b: Long) if RangeBounds.isLongBacked(t) =>
          if (atLeast) key => !key.isNullAt(position) && key.getLong(position) >= b
          else key => !key.isNullAt(position) && key.getLong(position) <= b
        case (t, b: Int) if RangeBounds.isIntBacked(t) =>
          if (atLeast) key => !key.isNullAt(position) && key.getInt(position) >= b
          else key => !key.isNullAt(position) && key.getInt(position) <= b
        case (st: StructType, b: InternalRow) if st.fields.forall(f => RangeBounds.isPrimitive(f.dataType)) &&
            st.indices.forall(i => !b.isNullAt(i)) =>
          val n = st.length
          val long = st.fields.map(f => RangeBounds.isLongBacked(f.dataType))
          val bounds = Array.tabulate(n)(i => if (long(i)) b.getLong(i) else b.getInt(i).toLong)
          key => !key.isNullAt(position) && {
            val v = key.getStruct(position, n)
            var i = 0
            var cmp = 0
            var nulls = false
            while (cmp == 0 && i < n && !nulls) {
              if (v.isNullAt(i)) nulls = true
              else cmp = java.lang.Long.compare(if (long(i)) v.getLong(i) else v.getInt(i).toLong, bounds(i))
              i += 1
            }
            if (nulls) generic(key) else sign * cmp <= 0
          }
        case _ => generic
      }
    }
    override def includes(held: Any, incoming: Any): Boolean = ordering.gteq(held, incoming)
    override def merge(held: Any, incoming: Any): Any = if (ordering.gteq(held, incoming)) held else incoming
    override def intersect(a: Any, b: Any): Option[Any] = Some(if (ordering.lteq(a, b)) a else b)
    override def toBytes(bound: Any): Array[Byte] = proj(new GenericInternalRow(Array[Any](bound))).getBytes
    override def fromBytes(bytes: Array[Byte]): Any = {
      val r = new UnsafeRow(1)
      r.pointTo(bytes, bytes.length)
      if (r.isNullAt(0)) null else InternalRow.copyValue(getter(r, 0))
    }
  }

  /**
   * Several range attributes: a value is the point of their values, a bound a [[RangeRegion]],
   * stored as one array per range attribute (the corners' values, corner by corner).
   */
  final class Region(ranges: IndexedSeq[(Int, Boolean)], keySchema: StructType) extends RangeBounds {
    private val types: IndexedSeq[DataType] = ranges.map { case (p, _) => keySchema(p).dataType }
    private val orders: IndexedSeq[Ordering[Any]] =
      ranges.zip(types).map { case ((_, ge), t) => KeyScheme.ordering(t, ge) }
    private val getters = types.map(t => InternalRow.getAccessor(t, nullable = true))
    // interpreted, as in [[Single]]: a few bounds stored a micro-batch
    private lazy val proj = InterpretedUnsafeProjection.createProjection(types.indices.map(i =>
      BoundReference(i, ArrayType(types(i), containsNull = false), nullable = false)))

    override def valueOf(key: InternalRow): Any = point(key, InternalRow.copyValue)
    override def peek(key: InternalRow): Any = point(key, identity)
    private def point(key: InternalRow, copy: Any => Any): Any = {
      val point = ranges.indices.map { i =>
        val p = ranges(i)._1
        if (key.isNullAt(p)) null else copy(getters(i)(key, p))
      }
      if (point.contains(null)) null else point
    }
    override def boundOf(key: InternalRow): Any = valueOf(key) match {
      case null => RangeRegion.empty(orders)
      case point: IndexedSeq[Any] @unchecked => RangeRegion.empty(orders).add(point)
    }
    override def covers(bound: Any, value: Any): Boolean =
      value != null && bound.asInstanceOf[RangeRegion].covers(value.asInstanceOf[IndexedSeq[Any]])
    override def coversKey(bound: Any, key: InternalRow): Boolean = covers(bound, peek(key))
    override def includes(held: Any, incoming: Any): Boolean =
      held.asInstanceOf[RangeRegion].contains(incoming.asInstanceOf[RangeRegion])
    override def merge(held: Any, incoming: Any): Any =
      held.asInstanceOf[RangeRegion].union(incoming.asInstanceOf[RangeRegion])
    override def intersect(a: Any, b: Any): Option[Any] =
      Some(a.asInstanceOf[RangeRegion].intersect(b.asInstanceOf[RangeRegion])).filterNot(_.isEmpty)
    override def toBytes(bound: Any): Array[Byte] = {
      val corners = bound.asInstanceOf[RangeRegion].corners
      val columns = types.indices.map(i => new GenericArrayData(corners.map(_(i)).toArray[Any]))
      proj(new GenericInternalRow(columns.toArray[Any])).getBytes
    }
    override def fromBytes(bytes: Array[Byte]): Any = {
      val r = new UnsafeRow(types.length)
      r.pointTo(bytes, bytes.length)
      val columns: IndexedSeq[ArrayData] = types.indices.map(r.getArray)
      val n = columns.headOption.map(_.numElements()).getOrElse(0)
      RangeRegion.of(orders, (0 until n).map(j => types.indices.map(i =>
        InternalRow.copyValue(columns(i).get(j, types(i))))))
    }
  }
}
