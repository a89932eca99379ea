package punctuated.checkpoint

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import punctuated.compat.CheckpointFileManager
import punctuated.compat.{StatefulOperatorStateInfo, StreamingAggregationStateManager}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.types.{BooleanType, LongType, StructType}

import punctuated.state.GroupPunctuations
import punctuated.aggregate.PunctuatedAggregateExec
import punctuated.dedup.PunctuatedDeduplicateExec
import punctuated.join.{JoinInputState, PunctuatedSymmetricHashJoinExec}
import punctuated.join.multi.MultiJoinLayout
import punctuated.state.StoreNamespace

/**
 * One state store a punctuated operator opens, as Spark's state tools need to know it.
 *
 * @param name             the store name (`storeName` option of `format("statestore")`)
 * @param keySchema        its key rows
 * @param valueSchema      its value rows
 * @param numColsPrefixKey leading key columns it is prefix-scanned by (0: none)
 * @param ownSchemaFile    its schema file is ours to write and check (false: Spark's planned
 *                         operator writes and checks the same file with its own layout)
 */
final case class StoreSchema(name: String, keySchema: StructType, valueSchema: StructType, numColsPrefixKey: Int,
    ownSchemaFile: Boolean = true) {
  def encoderSpec: KeyStateEncoderSpec =
    if (numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, numColsPrefixKey)
    else NoPrefixKeyStateEncoderSpec(keySchema)
}

/** The stores each punctuated operator opens, with their layouts (as the operators open them). */
object StoreSchemas {
  /**
   * A join: each input's rows (key: join key..., the row's slot among its key's rows; value:
   * input columns..., matched; point look-ups only) and, when opened, the store both inputs share
   * ([[StoreNamespace]]: key (namespace, key bytes), value (value bytes), prefix: namespace).
   */
  def join(exec: PunctuatedSymmetricHashJoinExec): Seq[StoreSchema] = {
    val rows = exec.inputs.map { in =>
      val key = JoinInputState.keySchema(in.keys)
      StoreSchema(JoinInputState.rowsStoreName(in.number),
        key.add(JoinInputState.SeqColumn, LongType, nullable = false),
        DataTypeUtils.fromAttributes(in.output).add(JoinInputState.MatchedColumn, BooleanType, nullable = false),
        numColsPrefixKey = 0)
    }
    rows ++
      exec.stateStoreNames.filter(_ == StoreNamespace.StoreName).map(n =>
        StoreSchema(n, StoreNamespace.KeySchema, StoreNamespace.ValueSchema, 1))
  }

  /**
   * A multi-way join: each input's rows store (`input<i>-mjoin-rows`, key [[MultiJoinLayout.RowKeySchema]],
   * value: the input's row as it comes; point look-ups only), under a tree plan each
   * intermediate node's (`inputs-0-1-mjoin-rows`: the same key, its inputs' rows
   * concatenated in input order) and the store of its held
   * punctuations and closed values ([[StoreNamespace]]).
   *
   * @param stores  the stores it opens (`stateStoreNames`)
   * @param columns each input's columns, in input order
   */
  def multiJoin(stores: Seq[String], columns: Seq[Seq[Attribute]]): Seq[StoreSchema] = stores.map {
    case n if columns.indices.exists(MultiJoinLayout.of(_).rowsStore == n) =>
      val i = columns.indices.find(MultiJoinLayout.of(_).rowsStore == n).get
      StoreSchema(n, MultiJoinLayout.RowKeySchema, DataTypeUtils.fromAttributes(columns(i)), 0)
    case n if MultiJoinLayout.nodeInputs(n).exists(_.forall(columns.indices.contains)) =>
      // an intermediate node of a tree plan: its inputs' rows concatenated in input order
      StoreSchema(n, MultiJoinLayout.RowKeySchema,
        DataTypeUtils.fromAttributes(MultiJoinLayout.nodeInputs(n).get.flatMap(columns)), 0)
    case n if n == StoreNamespace.StoreName => StoreSchema(n, StoreNamespace.KeySchema, StoreNamespace.ValueSchema, 1)
    case n => throw new IllegalArgumentException(s"a multi-way join opens no store '$n'")
  }

  /** The held punctuations of an aggregation or deduplication ([[GroupPunctuations]]). */
  private val held = StoreSchema(GroupPunctuations.StoreName, GroupPunctuations.KeySchema, GroupPunctuations.ValueSchema, 0)

  /**
   * An aggregation: its groups in the default store (Spark's own layout for the state format
   * version: key = grouping key, value = the aggregation buffers) and its held punctuations.
   * The default store's schema file is the one Spark's planned `StateStoreSaveExec` writes and
   * checks at every run's first micro-batch, before our rules run, with the same key and value
   * layout: checking it again would only read it again.
   */
  def aggregate(exec: PunctuatedAggregateExec): Seq[StoreSchema] = {
    val key = DataTypeUtils.fromAttributes(exec.keyExpressions)
    val value = StreamingAggregationStateManager.createStateManager(
      exec.keyExpressions, exec.child.output, exec.stateFormatVersion).getStateValueSchema
    Seq(StoreSchema(StateStoreId.DEFAULT_STORE_NAME, key, value, 0, ownSchemaFile = false), held)
  }

  /**
   * A deduplication: the seen keys in the default store, and its held punctuations. The
   * default store's schema file stays Spark's: Spark's planned `StreamingDeduplicateExec`
   * checks the same file on every run's first batch with its value layout (one NullType
   * column `__dummy__`), which our `seen INT` would fail (`STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE`).
   * Its key schema is the same as ours, so `statestore` reads the seen keys (values as null).
   */
  def deduplicate(exec: PunctuatedDeduplicateExec): Seq[StoreSchema] =
    Seq(StoreSchema(StateStoreId.DEFAULT_STORE_NAME, DataTypeUtils.fromAttributes(exec.keyExpressions),
      PunctuatedDeduplicateExec.ValueSchema, 0, ownSchemaFile = false), held)
}

/**
 * Spark's description of a punctuated operator's state, written by the operator itself:
 *
 * {{{
 *   <checkpoint>/state/<operatorId>/_metadata/metadata           operator metadata (v1): name, stores
 *   <checkpoint>/state/<operatorId>/0/<store>/_metadata/schema   per store: key and value schemas
 * }}}
 *
 * Spark writes both on a run's first micro-batch for the operator *it* planned (its
 * `IncrementalExecution.StateSchemaAndOperatorMetadataRule`), before our physical rules
 * replace that operator: without this, the metadata lists Spark's stores (the join's four
 * `left-keyToNumValues` ...), and ours have no schema files, so `format("statestore")`
 * cannot read them. [[write]] runs where our operator is planned, after
 * [[CheckpointDeclarations.verify]] and before any store opens:
 *
 *  - every store's schema (but one whose schema file Spark's planned operator also checks:
 *    [[StoreSchemas.aggregate]]'s groups, [[StoreSchemas.deduplicate]]'s seen keys) goes through Spark's own check
 *    (`StateSchemaCompatibilityChecker.validateAndMaybeEvolveStateSchema`, schema format 2):
 *    written when absent, compared when present (an incompatible change fails with Spark's
 *    `STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE` / `..._VALUE_...`);
 *  - the operator metadata lists our stores with their prefix-key columns (what the state
 *    reader needs to decode RocksDB's prefix-scan keys) and is replaced when it lists others.
 *    Spark's v1 writer never overwrites an existing file, so after our first batch the file
 *    stays ours across restarts.
 *
 * The operator name recorded is the one of the operator Spark planned (`symmetricHashJoin`,
 * `stateStoreSave`, `dedupe`), not ours: on a restart Spark compares the recorded names with
 * its planned operators' short names (`checkOperatorValidWithMetadata`) before our rules
 * run, and would refuse ours (`STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA`).
 * Our operator's name is in the operator's own record ([[CheckpointDeclarations]]).
 *
 * Cost per run, on the driver, at its first micro-batch: one read of the metadata file (its bytes
 * compared) and one per store's own schema file (small files), a write only when they are not
 * ours yet.
 */
object StateMetadata {
  /** Spark's schema file format used for our stores (key and value schemas only). */
  val SchemaVersion = 2

  /** The operator metadata file (Spark's v1 layout). */
  def metadataPath(info: StatefulOperatorStateInfo): Path =
    new Path(new Path(CheckpointDeclarations.operatorDir(info), "_metadata"), "metadata")

  /** The metadata a punctuated operator's checkpoint should hold. */
  def metadata(info: StatefulOperatorStateInfo, recordedName: String, stores: Seq[StoreSchema]): OperatorStateMetadataV1 =
    OperatorStateMetadataV1(OperatorInfoV1(info.operatorId, recordedName),
      stores.map(s => StateStoreMetadataV1(s.name, s.numColsPrefixKey, info.numPartitions)).toArray)

  /**
   * Checks and writes the schema files of `stores` and the operator metadata naming them.
   *
   * @param recordedName the short name of the operator Spark planned (see the object's doc)
   */
  def write(info: StatefulOperatorStateInfo, recordedName: String, stores: Seq[StoreSchema],
      session: SparkSession, hadoopConf: Configuration): Unit = {
    stores.filter(_.ownSchemaFile).foreach { s =>
      StateSchemaCompatibilityChecker.validateAndMaybeEvolveStateSchema(info, hadoopConf,
        List(StateStoreColFamilySchema(StateStore.DEFAULT_COL_FAMILY_NAME, 0, s.keySchema, 0,
          s.valueSchema, Some(s.encoderSpec))),
        session.sessionState, SchemaVersion, storeName = s.name)
    }
    val path = metadataPath(info)
    val fm = CheckpointFileManager.create(path.getParent, hadoopConf)
    val wanted = bytes(metadata(info, recordedName, stores), path)
    if (!stored(fm, path).exists(java.util.Arrays.equals(_, wanted))) {
      fm.mkdirs(path.getParent)
      val out = fm.createAtomic(path, overwriteIfPossible = true)
      try { out.write(wanted); out.close() } catch { case NonFatal(e) => out.cancel(); throw e }
    }
  }

  /**
   * The metadata file's bytes as Spark's v1 writer writes them: compared with the stored file
   * as they are, with no JSON parsing (Spark's reader extracts the case classes by reflection,
   * some 30 ms on a run's first micro-batch). A file in another layout is rewritten.
   */
  private def bytes(m: OperatorStateMetadataV1, path: Path): Array[Byte] = {
    val buffer = new java.io.ByteArrayOutputStream()
    OperatorStateMetadataUtils.writeMetadata(
      new CheckpointFileManager.CancellableFSDataOutputStream(buffer) { override def cancel(): Unit = () }, m, path)
    buffer.toByteArray
  }

  /** The stored metadata file's bytes, if there is one that can be read. */
  private def stored(fm: CheckpointFileManager, path: Path): Option[Array[Byte]] =
    try {
      val in = fm.open(path)
      try Some(in.readAllBytes()) finally in.close()
    } catch { case NonFatal(_) => None }
}
