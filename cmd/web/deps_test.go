package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The product binary links no demo, test or fake: what stands in for Azure
// and for receivers in `make run` and the tests lives in cmd/fusebox-dev
// and test-only packages, so it can never be reached in production.
func TestTheProductLinksNoDevelopmentCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !slices.Contains(deps, "github.com/fusebox/fusebox/internal/web") {
		t.Fatalf("go list -deps gave %d packages without internal/web: not the product's dependencies", len(deps))
	}
	banned := []string{
		"github.com/fusebox/fusebox/internal/demo",
		"github.com/fusebox/fusebox/internal/amqphub",
		"github.com/fusebox/fusebox/internal/testenv",
		"github.com/fusebox/fusebox/internal/mailtest",
		"github.com/fusebox/fusebox/internal/apptest",
		"github.com/fusebox/fusebox/internal/faulttest",
		"github.com/chromedp/chromedp",
		"testing",
	}
	for _, d := range deps {
		// The SDK's fake ARM servers (azcore's internal pollers/fake is
		// part of every poller, not a fake server).
		fakeARM := strings.Contains(d, "/resourcemanager/") && strings.HasSuffix(d, "/fake")
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, b+"/") {
				t.Errorf("cmd/web links %s", d)
			}
		}
		if fakeARM {
			t.Errorf("cmd/web links %s", d)
		}
	}
}
