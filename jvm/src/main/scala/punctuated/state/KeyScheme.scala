package punctuated.state

/**
 * A punctuation scheme of one join input, seen through the join key: the scheme's
 * attributes are join-key columns, `constants` the key positions its constant patterns
 * fix, `range` the key position of its `attr<=` pattern, if any. Only such schemes can
 * purge join state (Li et al. 2006, §3: a punctuation on non-join attributes never covers
 * all future partners of a stored tuple). Two inputs' schemes over the same key positions
 * have the same [[id]], so their punctuations can be compared (Li et al. §5.1, lifespan).
 *
 * {{{
 *   join key (auction, day); scheme "auction"        → KeyScheme(constants = [0], range = None)
 *   join key (auction, day); scheme "auction, day<=" → KeyScheme(constants = [0], range = Some(1))
 * }}}
 */
final case class KeyScheme(constants: Array[Int], range: Option[Int]) {
  require(constants.forall(_ < 24) && range.forall(_ < 24), "join keys of at most 24 columns")

  /** Same key positions, same id, whichever input the scheme belongs to. */
  val id: Int = constants.foldLeft(0)((bits, p) => bits | (1 << p)) | range.map(r => (r + 1) << 24).getOrElse(0)

  /** A constant punctuation on the whole key: it closes exactly one key (point purge). */
  def isWholeKey(keyLength: Int): Boolean = range.isEmpty && constants.length == keyLength

  override def equals(other: Any): Boolean = other match {
    case k: KeyScheme => k.id == id
    case _ => false
  }
  override def hashCode(): Int = id
  override def toString: String =
    s"KeyScheme(${constants.mkString("[", ",", "]")}${range.map(r => s", $r<=").getOrElse("")})"
}
