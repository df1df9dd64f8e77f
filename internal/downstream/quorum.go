package downstream

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fusebox/fusebox/internal/circuit"
)

// Failing lists the members that fail on their own: opened by their own
// counts (not by this downstream), or whose counts break their rule now
// (the evaluator trips them within its tick). byID holds the members'
// circuits; counts their counts (a member missing from counts has none).
func Failing(d Downstream, byID map[string]circuit.Circuit, counts map[string]circuit.Counts) []string {
	var out []string
	for _, id := range d.Members {
		c, ok := byID[id]
		if !ok || c.Shadow {
			continue
		}
		switch {
		case c.State == circuit.Open && !d.Marks(c):
			out = append(out, id)
		case c.State == circuit.Closed && circuit.Trips(c, counts[id]):
			out = append(out, id)
		}
	}
	return out
}

// QuorumMet says whether members of at least Quorum apps fail, and the
// reason a trip on it gives. One sick caller never trips the others: a
// quorum of 2 needs members of two apps.
func QuorumMet(d Downstream, failing []string) (string, bool) {
	if d.Quorum < 1 || d.State != Closed {
		return "", false
	}
	var apps []string
	for _, id := range failing {
		if app, _, ok := circuit.SplitID(id); ok && !slices.Contains(apps, app) {
			apps = append(apps, app)
		}
	}
	if len(apps) < d.Quorum {
		return "", false
	}
	slices.Sort(failing)
	return fmt.Sprintf("members of %s fail on their own (quorum %d): %s", plural(len(apps), "app"), d.Quorum, strings.Join(failing, ", ")), true
}
