package web_test

import (
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/web"
)

// A server built without what it needs says which parts are missing, by
// the group and field a wiring change must fill.
func TestAMissingDependencyIsNamed(t *testing.T) {
	t.Parallel()
	_, err := web.New(web.Parts{})
	if err == nil {
		t.Fatal("New accepted no dependencies")
	}
	for _, want := range []string{"Base.Config", "Identity.Sessions", "Intake.AppKeys", "Circuits.Switch", "Intake.Pings", "Notify.Delivery", "Ops.Ready"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	// What may be off (OpenID Connect, host insight) is not asked for.
	for _, optional := range []string{"Identity.OIDC", "Identity.EasyAuth", "Circuits.HostInsight", "Jobs.FunctionRunner"} {
		if strings.Contains(err.Error(), optional) {
			t.Errorf("%q asks for %s, which may be nil", err, optional)
		}
	}
}
