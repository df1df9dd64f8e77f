package circuit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// A circuit says what it does once open, and how far its quorum is met.
func TestACircuitSaysItsRulesInWords(t *testing.T) {
	manual := circuit.Circuit{}
	if got := manual.PolicyText(); got != "stays open until someone resumes it" {
		t.Errorf("a circuit without trials says %q", got)
	}
	auto := circuit.Circuit{Settings: circuit.Settings{Policy: circuit.Policy{AutoResume: true, Cooldown: time.Minute}}}
	if got := auto.PolicyText(); got != "tries again on its own after 1m (half-open), doubling with each trip in a row up to 16m; trips again at the first failure" {
		t.Errorf("a circuit with trials says %q", got)
	}
	ratio := auto
	ratio.Rule = circuit.Rule{Ratio: 0.5, MinCalls: 200}
	if got := ratio.PolicyText(); !strings.Contains(got, "the trial passes after a whole window of at least 200 calls under the rule") {
		t.Errorf("a ratio circuit with trials says %q", got)
	}
	if got := manual.QuorumText(3); got != "" {
		t.Errorf("a circuit without a quorum says %q of it", got)
	}
	quorum := circuit.Circuit{Settings: circuit.Settings{Rule: circuit.Rule{MinInstances: 3}}}
	if got := quorum.QuorumText(2); got != "2 of the 3 instances its quorum needs reported them (reports that name no instance count toward none)." {
		t.Errorf("a quorum of 3 with 2 reporting says %q", got)
	}
}
