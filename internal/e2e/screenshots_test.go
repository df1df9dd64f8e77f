package e2e_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/demo"
)

// TestScreenshots writes the overview, a circuit page and the mailed
// resume page at desktop and phone width into $FUSEBOX_SCREENSHOTS, so
// reviewers see what a change did to them (`make screenshots` writes
// docs/screenshots). Without the variable it has nothing to write and
// skips: it is a generator, not a check (TestPhoneFit is the check).
func TestScreenshots(t *testing.T) {
	out := os.Getenv("FUSEBOX_SCREENSHOTS")
	if out == "" {
		t.Skip("FUSEBOX_SCREENSHOTS names no folder: nothing to write")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, p, _ := signedIn(t, "olivia")
	link := mailedResumeLink(t, srv)
	pages := []struct{ name, path, ready string }{
		{"overview", "/", `[data-testid="apps-count"]`},
		{"circuit", "/circuits/" + demo.AppID + "/SyncInventory", `[data-testid="state"]`},
		{"resume", link, `[data-testid="resume"]`},
	}
	for _, size := range []struct {
		name   string
		w, h   int64
		mobile bool
	}{{"desktop", 1280, 900, false}, {"phone", phoneWidth, 844, true}} {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		p.do(t, chromedp.EmulateViewport(size.w, size.h, opts...))
		for _, pg := range pages {
			p.do(t, chromedp.Navigate(srv.URL+pg.path), chromedp.WaitVisible(chromedp.CSS(pg.ready)))
			png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, pg.name+"-"+size.name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
