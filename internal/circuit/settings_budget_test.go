package circuit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Known costs over budget of the settings below (pausewindow_budget_test.go
// says how they are judged).
const (
	// ValidAlertRule lowers the whole text (strings.ToLower copies it)
	// before it checks the length: a 100 kB id allocates 100 kB to be
	// refused.
	knownRuleLowered = "ValidAlertRule lowers the whole text before its length check"
	// CheckProbeURL parses the whole URL (url.Parse unescapes it into a
	// copy) before it checks the length: 90 kB of %41 allocates 33 kB
	// each time it is refused.
	knownURLParsed = "CheckProbeURL parses the whole URL before its length check"
	// The forms hand a field to time.ParseDuration whatever its length,
	// and its error for an unknown unit quotes the unit and the whole
	// text, four bytes for each byte that is not UTF-8: "1" and 8 kB of
	// 0xcb allocate 94 kB.
	knownLongDuration = "a form's duration has no length bound"
)

// An alert rule's resource id of exactly 512 bytes, the longest
// ValidAlertRule takes, in capitals (so lowering it copies it).
func longestRule(kind string) string {
	id := "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000000/RESOURCEGROUPS/RG-ORDERS/PROVIDERS/MICROSOFT.INSIGHTS/" + kind + "/"
	return id + strings.Repeat("A", 512-len(id))
}

// An alert rule costs what the budget allows to check as its form and
// documents check it, and a circuit naming ten of them what the budget
// allows to answer whether an alert's rule is one (what an alert from
// Azure Monitor asks of every circuit).
func FuzzAlertRuleBudget(f *testing.F) {
	skipUnjudged(f)
	longest := "throttle:" + longestRule("METRICALERTS")
	for _, rule := range []string{longest, longestRule("SCHEDULEDQUERYRULES"), strings.ToLower(longestRule("ACTIVITYLOGALERTS")),
		"/subscriptions/s/providers/microsoft.insights/metricAlerts/a", "throttle:", "throttle:throttle:", "", "\x00", "/subscriptions/",
		"/subscriptions/x/providers/Microsoft.Insights/metricAlerts/a b", "/subscriptions/\u212a/providers/microsoft.insights/x",
		"/SUBSCRIPTIONS/" + strings.Repeat("\u0130", 200) + "/providers/microsoft.insights/x",
		longest + "A", "/SUBSCRIPTIONS/" + strings.Repeat("A", 100_000) + "/PROVIDERS/MICROSOFT.INSIGHTS/X"} {
		f.Add(rule, strings.TrimPrefix(longest, "throttle:"))
		f.Add(rule, strings.TrimPrefix(longest, "throttle:")[:511]+"B")
	}
	f.Add(longest, strings.Repeat("/", 100_000))
	f.Fuzz(func(t *testing.T, rule, alert string) {
		var valid bool
		c := measure(parseBudget, parseBytes, func() {
			valid = circuit.ValidAlertRule(rule)
			_, _ = circuit.RuleAction(rule)
		})
		c.check(t, fmt.Sprintf("ValidAlertRule(%.80q)", rule), func() string {
			if len(rule) > 512+len("throttle:") {
				return knownRuleLowered
			}
			return ""
		})
		if !valid {
			return
		}
		// Nine rules as long as a rule may be, each the alert's id but for
		// its last byte, then this one.
		var set circuit.Settings
		for i := range circuit.MaxAlertRules - 1 {
			near := alert
			if len(near) > 512 {
				near = near[:512]
			}
			set.AlertRules = append(set.AlertRules, near[:max(len(near)-1, 0)]+string(rune('0'+i)))
		}
		set.AlertRules = append(set.AlertRules, rule)
		id, _ := circuit.RuleAction(rule)
		for _, asked := range []string{alert, strings.ToUpper(id)} {
			var ok bool
			c = measure(evalBudget, 0, func() { _, ok = set.AlertRuleAction(asked) })
			c.check(t, fmt.Sprintf("AlertRuleAction(%.80q) of ten rules", asked), nil)
			if asked != alert && !ok {
				t.Errorf("%q: its own id in capitals is not named", rule)
			}
		}
	})
}

// A probe's URL costs what the budget allows to check, as its form,
// documents and the downstreams' check it.
func FuzzProbeURLBudget(f *testing.F) {
	skipUnjudged(f)
	host := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61) // 253 bytes, DNS's longest name
	base := "https://" + host + ":65535/"
	longest := base + strings.Repeat("%41", (circuit.MaxProbeURL-len(base))/3)
	longest += strings.Repeat("x", circuit.MaxProbeURL-len(longest))
	for _, u := range []string{longest, longest + "x", "https://orders.example.com/health", "http://localhost:8080/health", "http://[::1]:80/",
		"https://[::1", "https://user:pass@host/", "https://host/?" + strings.Repeat("a=1&", 400), "//host/path", "https:", "", "%",
		"\x7f", "https://host/%zz", "https://" + strings.Repeat("%41", 600), "https://x/" + strings.Repeat("%41", 30_000)} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		c := measure(parseBudget, parseBytes, func() {
			_ = circuit.CheckProbeURL(u, false)
			_, _, _ = circuit.Probe{URL: u, Good: 3, Every: 10 * time.Second}.Problems(true)
		})
		c.check(t, fmt.Sprintf("CheckProbeURL(%.80q)", u), func() string {
			if len(u) > circuit.MaxProbeURL {
				return knownURLParsed
			}
			return ""
		})
	})
}

// A duration given in a form (a circuit's window, cooldown, probe
// interval, hub retention, throttle quiet; a job's grace and durations; a
// maintenance window's length) costs what the budget allows to read: the
// forms read it with time.ParseDuration, some after trimming it.
func FuzzFormDurationBudget(f *testing.F) {
	skipUnjudged(f)
	for _, s := range []string{"30s", "1h30m", "168h", "2562047h47m16.854775807s", "2562047h47m16.854775808s", "-1h", "0", "",
		" 5m ", "1.5h", ".5s", "1e3s", "5 m", "1d", "7d", "\u00b5s", "1µs", "9223372036854775807ns", "0.0000000000000000000001s",
		strings.Repeat("1h", 5_000), strings.Repeat("0", 100_000) + "1s", strings.Repeat("x", 100_000), "1" + strings.Repeat("\xcb", 8_000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := measure(parseBudget, parseBytes, func() {
			_, _ = time.ParseDuration(s)
			_, _ = time.ParseDuration(strings.TrimSpace(s))
		})
		c.check(t, fmt.Sprintf("time.ParseDuration(%.80q)", s), func() string {
			if len(s) > 1024 {
				return knownLongDuration
			}
			return ""
		})
	})
}
