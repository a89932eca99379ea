package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.Generate
import org.apache.spark.sql.types.{Metadata, MetadataBuilder}

/**
 * The time-bucket columns of a band-only join's inputs (`punctuated.join.BandBuckets`): named
 * `__band_bucket_<width>`, recognised by their metadata (the bucket width), so that the walks over
 * punctuated input ([[PassThrough]]) see through the Generate that copies rows into buckets.
 *
 * {{{
 *   Generate(explode(band_buckets(a.ts, ...)), ..., [__band_bucket_6 {punctuated.bandBucket: 6}], a)
 *   BandBucketColumns.isBucketGenerate(that) = true
 * }}}
 */
object BandBucketColumns {

  /** Metadata key on the bucket columns (its value: the width). */
  val MetadataKey = "punctuated.bandBucket"

  /** The prefix of the bucket column's name on both inputs. */
  val Prefix = "__band_bucket_"

  /**
   * The bucket column's name: the prefix and the width, so that the rows a checkpoint stores
   * name the buckets they were placed in (a changed band is refused on restart:
   * `punctuated.checkpoint.Compatibility`).
   */
  def name(width: Long): String = Prefix + width

  /** The width a bucket column's name carries (the name alone, or followed by its type). */
  def widthOf(column: String): Option[Long] = {
    val name = column.takeWhile(_ != ' ')
    if (name.startsWith(Prefix)) name.stripPrefix(Prefix).toLongOption else None
  }

  def metadata(width: Long): Metadata = new MetadataBuilder().putLong(MetadataKey, width).build()

  /** Is this expression (an equi-join key, an output column) a bucket column? */
  def isBucket(e: Expression): Boolean = e match {
    case a: Attribute => a.metadata.contains(MetadataKey)
    case _ => false
  }

  /** Is this the Generate that copies a band-only join input's rows into their buckets? */
  def isBucketGenerate(g: Generate): Boolean = g.generatorOutput.exists(isBucket)
}
