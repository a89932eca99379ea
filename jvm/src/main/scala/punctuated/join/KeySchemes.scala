package punctuated.join

import org.apache.spark.sql.catalyst.expressions.Expression

import punctuated.declaration.Scheme
import punctuated.input.{KeyScheme, PunctuatedInput}

/**
 * Which of an input's schemes can purge state of a given equi-join: those whose every
 * attribute is a join-key column (Li et al. 2006, §3.1: only punctuations on join attributes
 * cover all future partners of a stored tuple). One place for the planner, the operator and
 * the safety check; the rule itself is [[PunctuatedInput.keyScheme]], the join's view of an
 * input [[punctuated.input.InputSpec.of]].
 */
object KeySchemes {

  /** The purging schemes of an input (declared ones and the unique key). */
  def usable(input: PunctuatedInput, keys: Seq[Expression]): Seq[(Scheme, KeyScheme)] = input.usable(keys)
}
