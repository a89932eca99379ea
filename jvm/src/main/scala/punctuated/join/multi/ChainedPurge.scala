package punctuated.join.multi

import scala.collection.mutable

/**
 * Chained purge of a multi-way join's stored rows (Li et al. 2006, §3.2, generalized to
 * attribute classes and multi-attribute schemes in §4.2): a stored row `t` of input `i` can
 * go once the punctuations of the other inputs — directly, or propagated through the rows
 * those inputs store (Lemma 1) — show that every future result containing `t` would need a
 * row that can no longer arrive.
 *
 * The test is a closure over the inputs. It starts from `t`'s key (its class values) as the
 * only *partial* result. An unvisited input `j` is *closed* when, for every partial `P`, one
 * of `j`'s schemes binds only classes `P` binds and `j` has punctuated `P`'s values on them:
 * no future row of `j` joins with any partial, so every result containing `t` takes its `j`
 * component from `j`'s stored rows. `j` is then visited and the partials are extended by
 * those rows. `t` is purgeable iff every input is visited (an empty list of partials closes
 * every remaining input: `t` has no partner left).
 *
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v);  stored: a(k=1), b(k=1, v=7);  punctuated: b "k = 1", c "v = 7"
 *   t = a(k=1):  partials [{k:1}]        b closed ({k:1} binds k, b punctuated k = 1)
 *                partials [{k:1, v:7}]   c closed ({k:1, v:7} binds v, c punctuated v = 7)
 *                every input visited: a(k=1) is purged
 * }}}
 *
 * Everything here is pure: the state is seen through [[ChainedPurge.Inputs]] (look-ups by
 * class value, punctuation look-ups), so the rule is unit-tested without Spark and the
 * operator ([[MultiJoinTask]]) gives it its state stores.
 */
object ChainedPurge {

  /** A binding: class number -> class value (values compare by `equals`). */
  type Binding[V] = Map[Int, V]

  /** What the closure reads of a multi-way join's state in one cell. */
  trait Inputs[V] {
    /** Number of inputs (0 .. n-1). */
    def size: Int

    /** The classes input `j` has a column in. */
    def classes(j: Int): Seq[Int]

    /**
     * The distinct keys (bindings over `classes(j)`) of `j`'s stored rows that agree with
     * `binding` on every class both have. Only asked with a binding sharing a class with
     * `j` (a look-up by that class's value, never a scan).
     */
    def storedKeys(j: Int, binding: Binding[V]): Iterable[Binding[V]]

    /**
     * Has `j` closed `binding`: does it hold or remember a punctuation of a scheme whose
     * bound classes are all bound by `binding`, with `binding`'s values on them?
     */
    def closed(j: Int, binding: Binding[V]): Boolean
  }

  /** The verdict on one stored key. */
  sealed trait Verdict
  case object Purgeable extends Verdict
  case object Kept extends Verdict
  /** More partial results than the cap: not decided (kept this batch). */
  case object Abandoned extends Verdict

  /**
   * Is every row of input `i` with key `key` purgeable?
   *
   * @param cap at most this many partial results are built; above it the check is
   *            abandoned (the row stays, and is checked again when touched)
   */
  def check[V](inputs: Inputs[V], i: Int, key: Binding[V], cap: Int): Verdict =
    check(inputs, Set(i), key, cap)

  /**
   * Is every stored combination covering the inputs `covered` with key `key` (its class
   * values) purgeable? The closure starts with `covered` visited and `key` as the only
   * partial: the rule for an intermediate node of a tree plan, whose rows join one row of
   * each input it covers. `check(inputs, i, key, cap)` is `covered = {i}`.
   *
   * {{{
   *   a(k) ⋈ b(k, v) ⋈ c(v), node {a, b} with key {k:1, v:7}; c punctuated v = 7:
   *   c closed -> every input visited: purgeable (whatever a and b punctuated)
   * }}}
   */
  def check[V](inputs: Inputs[V], covered: Set[Int], key: Binding[V], cap: Int): Verdict = {
    val visited = mutable.Set(covered.toSeq: _*)
    var partials: Seq[Binding[V]] = Seq(key)
    var changed = true
    var abandoned = false
    while (changed && !abandoned && visited.size < inputs.size) {
      changed = false
      var j = 0
      while (j < inputs.size && !abandoned) {
        if (!visited(j) && partials.forall(p => inputs.closed(j, p))) {
          visited += j
          changed = true
          if (partials.nonEmpty) {
            val extended = mutable.LinkedHashSet.empty[Binding[V]]
            val it = partials.iterator
            while (it.hasNext && !abandoned) {
              val p = it.next()
              inputs.storedKeys(j, p).foreach(u => extended += (p ++ u))
              if (extended.size > cap) abandoned = true
            }
            partials = extended.toSeq
          }
        }
        j += 1
      }
    }
    if (abandoned) Abandoned else if (visited.size == inputs.size) Purgeable else Kept
  }

  /** What the fixpoint also needs: whether a key is still stored, and removing one. */
  trait State[V] extends Inputs[V] {
    def isStored(j: Int, key: Binding[V]): Boolean
    /** Removes every stored row of `j` with this key. */
    def remove(j: Int, key: Binding[V]): Unit
  }

  /**
   * The outcome of [[purge]].
   *
   * @param purged    the keys removed, as (input, key), in the order removed
   * @param abandoned checks abandoned over the cap (`numPurgeChecksAbandoned`)
   * @param checked   stored keys checked (`numPurgeChecks`)
   */
  final case class Result[V](purged: Seq[(Int, Binding[V])], abandoned: Long, checked: Long)

  /**
   * Purges to a fixpoint, starting from `candidates` (keys of stored rows, by input): each
   * purgeable one is removed, and the keys of other inputs joinable with it (sharing a
   * class value) are checked again, since its removal can close partial results that
   * needed it.
   */
  def purge[V](state: State[V], candidates: Iterable[(Int, Binding[V])], cap: Int): Result[V] = {
    val queue = mutable.Queue.empty[(Int, Binding[V])]
    val queued = mutable.HashSet.empty[(Int, Binding[V])]
    def enqueue(c: (Int, Binding[V])): Unit = if (queued.add(c)) queue.enqueue(c)
    candidates.foreach(enqueue)
    val purged = mutable.ArrayBuffer.empty[(Int, Binding[V])]
    var abandoned = 0L
    var checked = 0L
    while (queue.nonEmpty) {
      val c @ (j, key) = queue.dequeue()
      queued -= c
      if (state.isStored(j, key)) {
        checked += 1
        check(state, j, key, cap) match {
          case Purgeable =>
            state.remove(j, key)
            purged += c
            for (l <- 0 until state.size if l != j && state.classes(l).exists(key.contains)) {
              state.storedKeys(l, key).foreach(u => enqueue(l -> u))
            }
          case Abandoned => abandoned += 1
          case Kept =>
        }
      }
    }
    Result(purged.toSeq, abandoned, checked)
  }
}
