package punctuated.checkpoint

import org.json4s._
import org.json4s.jackson.JsonMethods

/**
 * A scheme as a stateful operator's state depends on it: the text the user declared, and
 * the key positions it covers (`0`, `0,1<=`: the operator's key columns it fixes, and its
 * range) — two schemes with the same key are the same to the state, whatever their text.
 */
final case class KeyedScheme(text: String, key: String)

/**
 * What an operator's state depends on in one of its inputs' declarations.
 *
 * @param role    which input: `left` / `right` of a join, `input 1`, `input 2` ... of an
 *                aggregation or deduplication (in the order their streams are found)
 * @param table   the table or stream (for messages: a renamed table is the same input)
 * @param marker  the marker column(s) (`punctuated.marker`)
 * @param unique  the unique key (`punctuated.unique`), if declared
 * @param schemes the declared schemes, as written back by the parser (canonical text); for
 *                an aggregation or deduplication, the schemes it reads: the declared ones,
 *                then the unique key ([[withUnique]])
 * @param purging the schemes whose punctuations remove state (a join's key schemes)
 * @param indexed the other input's schemes this input's stored keys are indexed for (a
 *                join's range index)
 * @param columns the columns of the rows stored for this input, in order (`id BIGINT`): a
 *                join stores its inputs' rows as they come, and which columns reach it, in
 *                which order, follows the declarations (the marker and scheme columns are
 *                kept through projections)
 * @param classes the attribute class of each of its key columns (a multi-way join's input:
 *                its key is its class values in increasing class number; its purging
 *                schemes' keys are positions in that key)
 */
final case class InputRecord(
    role: String,
    table: String,
    marker: Option[String],
    unique: Option[String],
    schemes: Seq[String],
    purging: Seq[KeyedScheme] = Nil,
    indexed: Seq[KeyedScheme] = Nil,
    columns: Seq[String] = Nil,
    withUnique: Boolean = false,
    classes: Seq[Int] = Nil) {

  /** The declaration, for messages. */
  def declarationText: String = s"$table ($role): $properties"

  /** Is `other` the same table declared the same way (its stored columns may differ)? */
  def declaredAs(other: InputRecord): Boolean = table == other.table && properties == other.properties

  /** The declared properties, as text. */
  def properties: String = {
    val label = if (withUnique) "schemes (then the unique key, if any)" else "schemes"
    val parts = (if (schemes.isEmpty) Seq("no schemes") else Seq(s"$label '${schemes.mkString("; ")}'")) ++
      marker.map(m => s"marker '$m'") ++ unique.map(u => s"unique '$u'")
    parts.mkString(", ")
  }
}

/**
 * The declarations a punctuated stateful operator's checkpointed state was written with,
 * and the layout derived from them, recorded in the operator's state directory
 * ([[CheckpointDeclarations]]). Later runs compare their own record with it before any
 * state store is opened ([[Compatibility]]).
 *
 * @param operator      the operator's short name (`punctuatedSymmetricHashJoin` ...)
 * @param layoutVersion the version of the operator's state layout ([[StateLayouts]])
 * @param stores        the state stores the operator opens in every partition
 * @param inputs        its inputs' declarations
 * @param kinds         an aggregation's or deduplication's closing schemes, in kind order
 *                      (kind n is the n-th): held punctuations and stored groups name a
 *                      scheme by its kind
 * @param partitionedBy an aggregation or deduplication whose shuffle hashes by part of its key: those
 *                      key positions ([[punctuated.input.KeyPrefix]]; none: the whole key,
 *                      as Spark, and as every checkpoint before the field). A group's state
 *                      lives in the partition its hash names, so a checkpoint keeps it for good
 */
final case class OperatorRecord(
    operator: String,
    layoutVersion: Int,
    stores: Seq[String],
    inputs: Seq[InputRecord],
    kinds: Seq[KeyedScheme] = Nil,
    plan: Option[PlanRecord] = None,
    partitionedBy: Option[Seq[Int]] = None) {

  def toJson: String = JsonMethods.compact(JsonMethods.render(OperatorRecord.toJValue(this)))
  def declarationText: String = inputs.map(_.declarationText).mkString("; ")
}

object OperatorRecord {
  /** Version of the record's own format (not of the state layout). */
  val FormatVersion = 1

  private def keyed(s: KeyedScheme): JValue = JObject("text" -> JString(s.text), "key" -> JString(s.key))
  private def strings(s: Seq[String]): JValue = JArray(s.map(JString(_)).toList)
  private def opt(s: Option[String]): JValue = s.map(JString(_)).getOrElse(JNull)

  private def toJValue(r: OperatorRecord): JValue = JObject(List[JField](
    "formatVersion" -> JInt(FormatVersion),
    "operator" -> JString(r.operator),
    "layoutVersion" -> JInt(r.layoutVersion),
    "stores" -> strings(r.stores),
    "inputs" -> JArray(r.inputs.map(i => JObject(List[JField](
      "role" -> JString(i.role),
      "table" -> JString(i.table),
      "marker" -> opt(i.marker),
      "unique" -> opt(i.unique),
      "schemes" -> strings(i.schemes),
      "purging" -> JArray(i.purging.map(keyed).toList),
      "indexed" -> JArray(i.indexed.map(keyed).toList),
      "columns" -> strings(i.columns),
      "withUnique" -> JBool(i.withUnique)) ++
      // a multi-way join's input only: the binary join's records keep their text
      (if (i.classes.isEmpty) Nil else List[JField]("classes" -> JArray(i.classes.map(c => JInt(c)).toList)))
    )).toList),
    "kinds" -> JArray(r.kinds.map(keyed).toList)) ++
    r.plan.map(p => ("plan", PlanRecord.toJValue(p)): JField).toList ++
    // only when hashed by part of the key: the other records keep their text
    r.partitionedBy.map(p => ("partitionedBy", JArray(p.map(i => JInt(i)).toList)): JField).toList)

  /** The record in `json`; fails on a record of a newer format (written by a newer version). */
  def fromJson(json: String): OperatorRecord = {
    val v = JsonMethods.parse(json)
    def str(j: JValue): String = j match {
      case JString(s) => s
      case other => throw new IllegalArgumentException(s"expected a string, got $other")
    }
    def opt(j: JValue): Option[String] = j match {
      case JString(s) => Some(s)
      case _ => None
    }
    def int(j: JValue): Int = j match {
      case JInt(i) => i.toInt
      case other => throw new IllegalArgumentException(s"expected a number, got $other")
    }
    def arr(j: JValue): List[JValue] = j match {
      case JArray(xs) => xs
      case _ => Nil
    }
    def keyed(j: JValue) = KeyedScheme(str(j \ "text"), str(j \ "key"))
    val format = int(v \ "formatVersion")
    require(format <= FormatVersion, s"record format $format is newer than this version's ($FormatVersion)")
    OperatorRecord(
      operator = str(v \ "operator"),
      layoutVersion = int(v \ "layoutVersion"),
      stores = arr(v \ "stores").map(str),
      inputs = arr(v \ "inputs").map(i => InputRecord(
        role = str(i \ "role"), table = str(i \ "table"), marker = opt(i \ "marker"),
        unique = opt(i \ "unique"), schemes = arr(i \ "schemes").map(str),
        purging = arr(i \ "purging").map(keyed), indexed = arr(i \ "indexed").map(keyed),
        columns = arr(i \ "columns").map(str), withUnique = (i \ "withUnique") == JBool(true),
        classes = arr(i \ "classes").map(int))),
      kinds = arr(v \ "kinds").map(keyed),
      plan = (v \ "plan") match {
        case JNothing | JNull => None
        case p => Some(PlanRecord.fromJValue(p))
      },
      partitionedBy = (v \ "partitionedBy") match {
        case JArray(xs) => Some(xs.map(int))
        case _ => None
      })
  }
}
