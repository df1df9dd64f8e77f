package circuit

import (
	"fmt"

	"github.com/fusebox/fusebox/internal/spoken"
)

// What a circuit's page says of its rules, in words: kept beside the rules
// they describe, so that a change of one is seen in the other.

// PolicyText says what the circuit does once open: stays open until a
// person resumes it, or tries again on its own after its cooldown.
func (c Circuit) PolicyText() string {
	if !c.Policy.AutoResume {
		return "stays open until someone resumes it"
	}
	if c.Rule.Ratio > 0 {
		return fmt.Sprintf("tries again on its own after %s (half-open), doubling with each trip in a row up to %s; the trial passes after a whole window of at least %d calls under the rule",
			spoken.Duration(c.Policy.Cooldown), spoken.Duration(c.Policy.CooldownFor(64, 0)), c.Rule.MinCalls)
	}
	return fmt.Sprintf("tries again on its own after %s (half-open), doubling with each trip in a row up to %s; trips again at the first failure",
		spoken.Duration(c.Policy.Cooldown), spoken.Duration(c.Policy.CooldownFor(64, 0)))
}

// QuorumText says how many instances reported the window's failures, of
// the quorum the rule needs; "" when the rule needs none.
func (c Circuit) QuorumText(instances int) string {
	q := c.Rule.MinInstances
	if q <= 1 {
		return ""
	}
	return fmt.Sprintf("%d of the %d instances its quorum needs reported them (reports that name no instance count toward none).", instances, q)
}
