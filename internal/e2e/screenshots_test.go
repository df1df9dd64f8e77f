package e2e_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/errortexts"
	"github.com/fusebox/fusebox/internal/wording"
)

// TestScreenshots writes the overview, a circuit page and the mailed
// resume page at desktop and phone width into $FUSEBOX_SCREENSHOTS, so
// reviewers see what a change did to them (`make screenshots` writes
// docs/screenshots). Without the variable it has nothing to write and
// skips: it is a generator, not a check (TestPhoneFit is the check).
func TestScreenshots(t *testing.T) {
	t.Parallel()
	out := os.Getenv("FUSEBOX_SCREENSHOTS")
	if out == "" {
		t.Skip("FUSEBOX_SCREENSHOTS names no folder: nothing to write")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// The fake clock is moved to the real time first: the host's blobs in
	// Azurite carry the real time, and a page would say a checkpoint
	// last moved days "in the future".
	srv := apptest.Start(t, nil)
	srv.Clock.Advance(time.Since(srv.Clock.Now()))
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	p.signIn(t, srv.URL, "olivia")
	if err := demo.SeedHistory(t.Context(), srv.App.Store, srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	link := mailedResumeLink(t, srv)
	mail := tripMail(t, srv)
	pages := []struct{ name, path, ready string }{
		{"overview", "/", `[data-testid="apps-count"]`},
		{"circuit", "/circuits/" + demo.AppID + "/SyncInventory", `[data-testid="state"]`},
		{"resume", link, `[data-testid="resume"]`},
		{"episode", "/circuits/" + demo.AppID + "/SyncInventory/episodes/3", `[data-testid="episode-timeline"]`},
		{"mail", mail, "h1"},
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
			to := srv.URL + pg.path
			if strings.HasPrefix(pg.path, "file://") {
				to = pg.path
			}
			p.do(t, chromedp.Navigate(to), chromedp.WaitVisible(chromedp.CSS(pg.ready)))
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

// tripMail writes the demo's open circuit's trip mail (HTML, as the
// recipient's mail program shows it) beside the screenshots and returns
// its file URL.
func tripMail(t *testing.T, srv *apptest.Server) string {
	t.Helper()
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "SyncInventory")
	if err != nil {
		t.Fatal(err)
	}
	app, err := srv.App.Store.Apps.Get(t.Context(), demo.AppID)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(srv.URL)
	comp := wording.Composer{Signer: srv.App.Links, BaseURL: base, LinkTTL: time.Hour, Now: srv.Clock.Now, Errors: &errortexts.Cache{Rows: srv.App.Store.Failures.Reader()}}
	m, err := comp.Compose(alerts.Message{Circuit: ci.ID(), Episode: ci.Episode, Kind: alerts.KindOpened, To: "oncall@example.com"}, ci, app)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "mail.html")
	if err := os.WriteFile(file, []byte(m.HTML), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + file
}
