package web_test

import (
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/web"
)

// A server built without what it needs says which parts are missing, by
// the group and field a wiring change must fill.
func TestAMissingDependencyIsNamed(t *testing.T) {
	_, err := web.New(web.Deps{})
	if err == nil {
		t.Fatal("New accepted no dependencies")
	}
	for _, want := range []string{"Base.Config", "Identity.Sessions", "Identity.AppKeys", "CircuitDeps.Actions", "JobDeps.Pings", "NotifyDeps.Delivery", "Ops.Ready"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}
