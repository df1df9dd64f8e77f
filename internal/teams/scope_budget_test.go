package teams_test

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/teams"
)

// A price for every stored expression (internal/jobs and internal/circuit
// hold theirs to the same figures): whatever an admin typed, reading a
// team's scopes costs at most parseBudget and parseBytes, and asking
// whether they admit an app at most evalBudget.
const (
	parseBudget = time.Millisecond
	parseBytes  = 64 << 10
	evalBudget  = 10 * time.Microsecond
)

// The machine is shared and noisy (other tests, other people's builds:
// a load of 15 on two cores slowed calls three to five times over), so
// the least of several times is the call's own cost. A call is timed up
// to costReps times, stopping at the first time within budget or at one
// 50 times over it; a cost still over budget that no known bug explains
// is timed up to timeReps times more, yielding between calls and
// collecting garbage once, before it fails.
// Allocations are counted for the whole process, the fuzzing engine's
// goroutines included, so a count over budget is taken again, at most
// costReps times, and the least kept.
const (
	costReps = 5
	timeReps = 20
)

// instrumented is how much slower code runs while it is fuzzed: the
// coverage counters made AlertRuleAction 7 times slower under -fuzz, and
// 7 to 15 times in a build with -d=libfuzzer everywhere. Fuzzing judges
// time against the budget times this, so it finds what is grossly over;
// the seeds, run without it (scripts/test.sh), are judged exactly.
const instrumented = 20

// strictBudget makes the costs that a known bug explains fail too:
// FUSEBOX_BUDGET_STRICT=1 go test -run Budget ./internal/teams.
// logCosts logs every cost (FUSEBOX_BUDGET_LOG=1, with -v).
var (
	strictBudget = os.Getenv("FUSEBOX_BUDGET_STRICT") != ""
	logCosts     = os.Getenv("FUSEBOX_BUDGET_LOG") != ""
)

// judged is false under the race detector, which slows every call many
// times over and makes sync.Pool drop what it holds (regexp and fmt then
// allocate afresh each call): nothing could be judged there, so the
// targets skip. make test runs their seeds again without it.
var judged = !raceBuild()

// skipUnjudged skips a target where nothing would be judged.
func skipUnjudged(f *testing.F) {
	if !judged {
		f.Skip("costs are judged without the race detector")
	}
}

func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// timeBudget is budget as this process judges it: scaled while fuzzing.
func timeBudget(budget time.Duration) time.Duration {
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return instrumented * budget
	}
	return budget
}

// cost is what a call cost, and what it may: the least time of its timed
// calls, and the least its calls allocated.
type cost struct {
	call            func()
	took, budget    time.Duration
	bytes, maxBytes uint64 // maxBytes 0: allocations are not judged
}

// measure calls call for its allocations and its time, as costReps says.
func measure(budget time.Duration, maxBytes uint64, call func()) cost {
	c := cost{call: call, took: math.MaxInt64, budget: timeBudget(budget), bytes: math.MaxUint64, maxBytes: maxBytes}
	var before, after runtime.MemStats
	for range costReps {
		runtime.ReadMemStats(&before)
		start := time.Now()
		call()
		c.took = min(c.took, time.Since(start))
		runtime.ReadMemStats(&after)
		c.bytes = min(c.bytes, after.TotalAlloc-before.TotalAlloc)
		if (maxBytes == 0 || c.bytes <= maxBytes) && c.took <= c.budget || c.took > 50*c.budget {
			break
		}
	}
	return c
}

// retime times c's call again, as timeReps says, for a second at most:
// one call so slow that noise cannot explain it may be a preemption all
// the same.
func (c *cost) retime() {
	for i, start := 0, time.Now(); i < timeReps && c.took > c.budget && time.Since(start) < time.Second; i++ {
		if i == timeReps/2 {
			runtime.GC() // no collection under way taxes the calls left
		}
		runtime.Gosched()
		at := time.Now()
		c.call()
		c.took = min(c.took, time.Since(at))
	}
}

// over says how c is over budget, or nothing.
func (c cost) over() []string {
	var over []string
	if c.took > c.budget {
		over = append(over, fmt.Sprintf("took %s, budget %s", c.took, c.budget))
	}
	if c.maxBytes > 0 && c.bytes > c.maxBytes {
		over = append(over, fmt.Sprintf("allocated %d B, budget %d B", c.bytes, c.maxBytes))
	}
	return over
}

// check fails t when c is over budget, unless known, asked only then,
// names the bug that explains it: that is logged, and fails only with
// strictBudget.
func (c cost) check(t *testing.T, what string, known func() string) {
	t.Helper()
	why := ""
	if len(c.over()) > 0 && known != nil {
		why = known()
	}
	if len(c.over()) > 0 && why == "" {
		c.retime()
	}
	over := c.over()
	switch {
	case len(over) == 0:
		if logCosts {
			t.Logf("%s: %s of %s, %d B of %d B", what, c.took, c.budget, c.bytes, c.maxBytes)
		}
	case why == "":
		t.Error(what + ": " + strings.Join(over, "; "))
	case strictBudget:
		t.Errorf("%s: %s (known: %s)", what, strings.Join(over, "; "), why)
	default:
		t.Logf("%s: %s (known: %s)", what, strings.Join(over, "; "), why)
	}
}

// knownLongText is the bug that explains a parse of a long text over
// budget: MaxScopes and MaxScopeLen bound the scopes kept, not the text
// read. ParseScopes splits the whole text first, trims each line before
// it measures it, and drops repeats before it counts: a scope given
// 10,000 times (1.6 MB: 20 ms or more, 2.4 MB allocated), or padded with
// a megabyte of spaces, is accepted.
const knownLongText = "ParseScopes reads a text of any length (repeats and spaces are not counted)"

// knownRefusal is the bug that explains an over-budget Admits that
// refused: it names every scope the team holds in its error (22 µs and
// 27 kB at 50 scopes of the longest), though the teams page and app
// discovery ask it of every app or site only whether it is nil.
const knownRefusal = "Admits writes its refusal naming every scope, even for callers that only test it"

// longestScopes are MaxScopes scopes as long as a scope may be: a
// resource group's name of 90 characters, ARM's longest, in capitals.
func longestScopes() []string {
	out := make([]string, teams.MaxScopes)
	for i := range out {
		rg := fmt.Sprintf("RG-%02d-", i) + strings.Repeat("(A.B_C)", 12)
		out[i] = "/subscriptions/0000000" + fmt.Sprint(i%10) + "-0000-0000-0000-000000000000/resourceGroups/" + rg[:90]
	}
	return out
}

// A team's scopes cost what the budget allows to read, whatever an admin
// typed, and to answer whether they admit an app, whatever the app says
// of where it lives.
func FuzzScopesBudget(f *testing.F) {
	skipUnjudged(f)
	longest := longestScopes()
	all := strings.Join(longest, "\r\n")
	guid := "0123abcd-0000-4000-8000-0123456789ab"
	for _, text := range []string{all, strings.Join(longest, ","), all + "\n" + longest[0] + "X", longest[0],
		"/subscriptions/" + guid, "/SUBSCRIPTIONS/" + strings.ToUpper(guid) + "/RESOURCEGROUPS/RG.", guid + "/rg-billing", guid + "/",
		"/subscriptions/" + guid + "/resourceGroups/", "/subscriptions/" + guid + "/providers/x", "", "\n\n,,\r", "not a scope",
		strings.Repeat(" ", teams.MaxScopeLen) + guid + strings.Repeat(" ", teams.MaxScopeLen), strings.Repeat("a", teams.MaxScopeLen+1),
		"/subscriptions/" + guid + "/resourceGroups/" + strings.Repeat("\u212a", 90), strings.Repeat("a,", 50_000),
		strings.Repeat(longest[0]+"\n", 10_000), strings.Repeat(" ", 200_000) + guid} {
		f.Add(text, "00000003-0000-0000-0000-000000000000", longest[3][len(longest[3])-90:])
		f.Add(text, strings.ToUpper(guid), "RG-BILLING")
	}
	f.Fuzz(func(t *testing.T, text, subscription, resourceGroup string) {
		var scopes []teams.Scope
		var err error
		c := measure(parseBudget, parseBytes, func() { scopes, err = teams.ParseScopes(text) })
		c.check(t, fmt.Sprintf("ParseScopes(%.80q)", text), func() string {
			if len(text) > teams.MaxScopes*(teams.MaxScopeLen+2) {
				return knownLongText
			}
			return ""
		})
		c = measure(parseBudget, parseBytes, func() { _, _ = teams.ParseScope(text) })
		c.check(t, fmt.Sprintf("ParseScope(%.80q)", text), nil)
		if err != nil {
			return
		}
		if len(scopes) > teams.MaxScopes {
			t.Errorf("ParseScopes(%.80q) kept %d scopes, more than %d", text, len(scopes), teams.MaxScopes)
		}
		team := teams.Team{Name: "billing", Scopes: scopes}
		app := circuit.App{ID: "orders", SubscriptionID: subscription, ResourceGroup: resourceGroup, Switch: circuit.SwitchARM}
		var refused error
		c = measure(evalBudget, 0, func() { refused = team.Admits(app, false) })
		c.check(t, fmt.Sprintf("Admits(%.40q/%.40q) of %d scopes", subscription, resourceGroup, len(scopes)), func() string {
			if refused != nil {
				return knownRefusal
			}
			return ""
		})
	})
}
