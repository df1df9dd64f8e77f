package web_test

import (
	"strings"
	"testing"

	"github.com/fusebox/fusebox/internal/web"
)

// A server built without what it needs says which parts are missing, by
// the field a wiring change must fill.
func TestAMissingDependencyIsNamed(t *testing.T) {
	t.Parallel()
	_, err := web.New(web.Base{}, web.Identity{}, &web.Services{})
	if err == nil {
		t.Fatal("New accepted no dependencies")
	}
	for _, want := range []string{"Base.Config", "Identity.Sessions", "Services.AppKeys", "Services.Breakers", "Services.Delivery", "Services.Ready"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	// What may be off (OpenID Connect, host insight) is not asked for.
	for _, optional := range []string{"Identity.OIDC", "Identity.EasyAuth", "Services.HostInsight", "Services.Discoverer", "Services.AlertTokens"} {
		if strings.Contains(err.Error(), optional) {
			t.Errorf("%q asks for %s, which may be nil", err, optional)
		}
	}
}
