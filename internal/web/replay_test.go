package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azeventhubs/v2"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/auth"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/replay"
	"github.com/fusebox/fusebox/internal/testenv"
)

// TestAStormResumesEventHubsFunctionsFromBeforeTheirFirstFailure: on the
// real clock, ProcessOrders (an Event Hubs function whose checkpoints the
// host moved past its failures) and SyncInventory (no hub) are resumed in
// one storm call asking for the first failure: ProcessOrders' partitions
// are moved back and it says what it replayed, SyncInventory resumes where
// it stopped. Before that, its app's choice puts "where it stopped" first
// on the resume confirmation, and the circuit's own choice wins over it.
func TestAStormResumesEventHubsFunctionsFromBeforeTheirFirstFailure(t *testing.T) {
	t.Parallel()
	opToken, opHash := auth.NewAPIToken()
	srv := apptest.StartWith(t, map[string]string{"FUSEBOX_API_TOKENS": "deploy-bot:operator:" + opHash}, apptest.Options{RealClock: true, ReplayQuiet: time.Second})
	if err := demo.Seed(t.Context(), srv.App.Store, t.TempDir()+"/local.settings.json", time.Now()); err != nil {
		t.Fatal(err)
	}
	op := apiClient{t, newBrowser(t, srv.URL), opToken}
	conn := testenv.ConnectionString(t)
	bc, store := testenv.CheckpointStore(t)
	hub := testenv.Prefix(t)
	ns := hub + ".servicebus.windows.net"
	set := func(seq int64) {
		for p := range 2 {
			o := strconv.FormatInt(seq*256, 10)
			if err := store.SetCheckpoint(t.Context(), azeventhubs.Checkpoint{FullyQualifiedNamespace: ns, EventHubName: hub, ConsumerGroup: "$default",
				PartitionID: strconv.Itoa(p), SequenceNumber: &seq, Offset: &o}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	app, err := srv.App.Store.Apps.Get(t.Context(), demo.AppID)
	if err != nil {
		t.Fatal(err)
	}
	app.HostStorage, app.ResumeFrom = conn, circuit.ResumeFromCheckpoint
	if err := srv.App.Store.Apps.Put(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	ci, err := srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders")
	if err != nil {
		t.Fatal(err)
	}
	ci.EventHub = hub + "/$default"
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), ci); err != nil {
		t.Fatal(err)
	}
	// Where the partitions stood a minute ago, as the sampler kept it;
	// then the host checkpointed past 100 failed events on each.
	set(99)
	var marks []replay.Mark
	for p := range 2 {
		marks = append(marks, replay.Mark{Key: fmt.Sprintf("%s/%s/$default/%d", ns, hub, p), Sequence: 99, HasSequence: true, Offset: strconv.Itoa(99 * 256)})
	}
	if err := srv.App.Store.Replays.Put(t.Context(), demo.AppID, "ProcessOrders", replay.Sample{At: time.Now().Add(-time.Minute), Marks: marks}); err != nil {
		t.Fatal(err)
	}
	set(199)
	res := (apiClient{t, op.b, demo.Key}).call(http.MethodPost, "/api/v1/failures", `{"failures": [{"function": "ProcessOrders", "count": 101, "error": "store offline"}]}`)
	wantStatus(t, res, http.StatusAccepted)
	srv.WaitCircuit(t, demo.AppID, "ProcessOrders", "open and switched off", func(c circuit.Circuit) bool { return c.State == circuit.Open && !c.Pending() })
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { // the host left its checkpoints alone for the quiet
		props, err := bc.ServiceClient().NewContainerClient(hostinsight.EventHubContainer).NewBlobClient(ns+"/"+hub+"/$default/checkpoint/1").GetProperties(t.Context(), nil)
		return err == nil && time.Since(*props.LastModified) > 1500*time.Millisecond, "checkpoints written a moment ago"
	})

	b := newBrowser(t, srv.URL)
	b.signIn("olivia")
	page := b.get("/circuits/" + demo.AppID + "/ProcessOrders/resume")
	wantStatus(t, page, http.StatusOK)
	first, replayAt := strings.Index(page.body, `data-testid="confirm"`), strings.Index(page.body, `data-testid="confirm-replay"`)
	if first < 0 || replayAt < 0 || first > replayAt {
		t.Errorf("with the app choosing where it stopped, the confirmation offers (where it stopped at %d, from before the first failure at %d): want both, where it stopped first", first, replayAt)
	}
	if !strings.Contains(page.body, "replays about <strong>200</strong> events") {
		t.Errorf("the confirmation does not say 200 events would be replayed")
	}
	if ci, err = srv.App.Store.Circuits.Get(t.Context(), demo.AppID, "ProcessOrders"); err != nil {
		t.Fatal(err)
	}
	ci.ResumeFrom = circuit.ResumeFromFirstFailure // the circuit's own choice wins
	if err := srv.App.Store.Circuits.UpdateSettings(t.Context(), ci); err != nil {
		t.Fatal(err)
	}
	page = b.get("/circuits/" + demo.AppID + "/ProcessOrders/resume")
	if first, replayAt := strings.Index(page.body, `data-testid="confirm"`), strings.Index(page.body, `data-testid="confirm-replay"`); replayAt < 0 || first < replayAt {
		t.Errorf("with the circuit choosing the first failure, the confirmation offers where it stopped at %d, from before the first failure at %d", first, replayAt)
	}

	res = op.call(http.MethodPost, "/api/v1/circuits/resume", `{"circuits": ["orders-demo/ProcessOrders", "orders-demo/SyncInventory"], "reason": "store back", "from": "first-failure"}`)
	wantStatus(t, res, http.StatusOK)
	var got struct {
		Results []struct{ Circuit, State, Error, Replayed string }
	}
	if err := json.Unmarshal([]byte(res.body), &got); err != nil || len(got.Results) != 2 {
		t.Fatalf("%v: %s", err, res.body)
	}
	if r := got.Results[0]; r.Circuit != "orders-demo/ProcessOrders" || r.State != "closed" || !strings.Contains(r.Replayed, "replayed 200 events from before the first failure on 2 partitions") {
		t.Errorf("ProcessOrders: %+v", r)
	}
	if r := got.Results[1]; r.Circuit != "orders-demo/SyncInventory" || r.State != "closed" || r.Replayed != "" || r.Error != "" {
		t.Errorf("SyncInventory: %+v", r)
	}
	cps, err := store.ListCheckpoints(t.Context(), ns, hub, "$default", nil)
	if err != nil || len(cps) != 2 {
		t.Fatalf("%v, %d checkpoints", err, len(cps))
	}
	for _, c := range cps {
		if *c.SequenceNumber != 99 || *c.Offset != strconv.Itoa(99*256) {
			t.Errorf("partition %s reads back at %d/%s, want 99", c.PartitionID, *c.SequenceNumber, *c.Offset)
		}
	}
}
