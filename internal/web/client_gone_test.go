package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/faulttest"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A function host that restarts while its report waits on storage leaves
// before the answer. Nothing failed in Fusebox: the request is counted and
// logged as 499 (client closed request), never as a 5xx ERROR that an
// alert on server errors would count.
func TestAClientThatLeavesIsNotAServerError(t *testing.T) {
	t.Parallel()
	az := faulttest.StartAzurite(t)
	srv := apptest.Start(t, map[string]string{"FUSEBOX_STORAGE_CONNECTION_STRING": az.ConnectionString})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	az.Freeze()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/failures", strings.NewReader(`{"failures": [{"function": "ProcessOrders"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	if res, err := (&http.Client{Timeout: 500 * time.Millisecond}).Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the report was answered %d while storage was frozen", res.StatusCode)
	}
	az.Thaw()
	series := func(code string) string {
		return `fusebox_http_requests_total{code="` + code + `",method="POST",route="/api/v1/failures"} 1`
	}
	scrape := waitMetrics(t, srv.URL, []string{series("499")}, nil)
	if strings.Contains(scrape, `code="5`) {
		t.Errorf("a request whose client left is counted as a server error:\n%s", testenv.GrepLines(scrape, "fusebox_http_requests_total"))
	}
}
