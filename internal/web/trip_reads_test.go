package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A trip from a report reads the circuit's row at most twice: the check
// that decides it, and the switch's read under its claim. The transition
// and the record of the switched trigger are each one conditional write
// at the version read, with no read again.
func TestATripFromAReportReadsItsCircuitTwice(t *testing.T) {
	t.Parallel()
	srv, _ := apptest.SeededRealClock(t)
	reads := srv.App.Store.Circuits.CountReads(demo.AppID, "ProcessOrders")
	r := postJSON(t, srv.URL, demo.Key, `{"failures": [{"function": "ProcessOrders", "count": 1001}]}`)
	wantStatus(t, r, http.StatusAccepted)
	waits := int64(0)
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		waits++
		c, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
		return err == nil && c.State == circuit.Open && !c.Pending(), fmt.Sprintf("ProcessOrders is %s (pending %v, %v)", c.State, c.Pending(), err)
	})
	tripReads := reads() - waits // less the wait's own reads
	t.Logf("%d reads of ProcessOrders' row from the report to the trigger switched off", tripReads)
	if tripReads > 2 {
		t.Errorf("the trip read its circuit's row %d times, want at most 2 (the check, the switch's claim)", tripReads)
	}
}
