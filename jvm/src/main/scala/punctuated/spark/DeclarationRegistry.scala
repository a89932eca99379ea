package punctuated.spark

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId}

import punctuated.declaration.Declaration

/**
 * Which attributes belong to a declared stream, by expression id.
 *
 * A streaming query is analysed once; every micro-batch then re-plans it, replacing each
 * source by that batch's data (or by an empty relation) under the *same* attribute ids.
 * Declarations found at analysis ([[DeclaredStreams.find]]) are recorded here by attribute
 * id so that the per-batch planning rules find them in every batch, whatever the source
 * was replaced by. Ids are unique within the JVM, so entries never collide.
 */
object DeclarationRegistry {

  /** A declared stream, seen through the attributes it was declared on. */
  final case class Entry(streamId: Long, declaration: Declaration, columns: Seq[String])

  private val byExprId = new ConcurrentHashMap[ExprId, (Entry, String)]()
  private val nextStream = new java.util.concurrent.atomic.AtomicLong()

  /** Records a declared stream; returns its entry. */
  def register(declaration: Declaration, output: Seq[Attribute]): Entry = {
    val existing = output.headOption.flatMap(a => Option(byExprId.get(a.exprId))).map(_._1)
    existing.filter(_.declaration == declaration).getOrElse {
      val entry = Entry(nextStream.incrementAndGet(), declaration, output.map(_.name))
      output.foreach(a => byExprId.put(a.exprId, entry -> a.name))
      entry
    }
  }

  /** The declared stream and declared column name an attribute belongs to, if any. */
  def lookup(attribute: Attribute): Option[(Entry, String)] = Option(byExprId.get(attribute.exprId))

  /** The declared streams among some attributes, with their attributes by declared column. */
  def streamsIn(attributes: Seq[Attribute]): Seq[(Entry, Map[String, Attribute])] =
    attributes.flatMap(a => lookup(a).map { case (e, col) => (e, col, a) })
      .groupBy(_._1.streamId).values.toSeq
      .map(group => group.head._1 -> group.map { case (_, col, a) => col -> a }.toMap)
      .sortBy(_._1.streamId)
}
