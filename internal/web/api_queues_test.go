package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/testenv"
)

// The API lists the work an app set aside in its own queue storage: each
// poison queue with its source, count and oldest message, read from the
// queues' properties; a viewer's token is enough, a stranger gets 401, an
// app without storage configured 404.
func TestAPIListsTheWorkAnAppSetAside(t *testing.T) {
	t.Parallel()
	srv, _, viewer := apiServer(t)
	conn := testenv.ConnectionString(t)
	if !strings.Contains(conn, "QueueEndpoint=") {
		t.Fatal("the test storage has no QueueEndpoint: start Azurite with scripts/azurite.sh")
	}
	wantStatus(t, viewer.call(http.MethodGet, "/api/v1/apps/"+demo.AppID+"/queues", ""), http.StatusNotFound) // no host storage yet
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, conn, srv.Clock.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	source := queueStem()
	makeQueue(t, conn, source+"-poison", "order 1", "order 2")

	res := viewer.call(http.MethodGet, "/api/v1/apps/"+demo.AppID+"/queues", "")
	wantStatus(t, res, http.StatusOK)
	var got struct {
		Queues []struct {
			Name, Kind, Source string
			Count              int
			Oldest             *time.Time
		}
	}
	if err := json.Unmarshal([]byte(res.body), &got); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range got.Queues {
		if q.Name == source+"-poison" {
			found = true
			if q.Kind != "poison" || q.Source != source || q.Count != 2 || q.Oldest == nil {
				t.Errorf("the poison queue reads %+v, want kind poison, source %s, 2 messages, an oldest time", q, source)
			}
		}
	}
	if !found {
		t.Fatalf("%s-poison not listed: %s", source, res.body)
	}
	stranger := apiClient{t: t, b: viewer.b}
	wantStatus(t, stranger.call(http.MethodGet, "/api/v1/apps/"+demo.AppID+"/queues", ""), http.StatusUnauthorized)
	wantStatus(t, viewer.call(http.MethodGet, "/api/v1/apps/no-such-app/queues", ""), http.StatusNotFound)
}

// An operator sends poison messages back to their source queue through
// the API: each arrives there once, the poison queue is empty, the audit
// log says who, how many and why. Without a reason nothing moves.
func TestAnOperatorRequeuesPoisonMessagesThroughTheAPI(t *testing.T) {
	t.Parallel()
	srv, operator, viewer := apiServer(t)
	conn := testenv.ConnectionString(t)
	if !strings.Contains(conn, "QueueEndpoint=") {
		t.Fatal("the test storage has no QueueEndpoint: start Azurite with scripts/azurite.sh")
	}
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, conn, srv.Clock.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	source := queueStem()
	makeQueue(t, conn, source)
	makeQueue(t, conn, source+"-poison", "order 1", "order 2", "order 3")
	path := "/api/v1/apps/" + demo.AppID + "/queues/" + source + "-poison/requeue"
	wantStatus(t, operator.call(http.MethodPost, path, `{}`), http.StatusUnprocessableEntity) // no reason
	wantStatus(t, viewer.call(http.MethodPost, path, `{"reason": "fixed"}`), http.StatusForbidden)
	wantStatus(t, operator.call(http.MethodPost, "/api/v1/apps/"+demo.AppID+"/queues/"+source+"/requeue", `{"reason": "fixed"}`), http.StatusNotFound) // not set aside

	res := operator.call(http.MethodPost, path, `{"reason": "inventory fixed in 1.4.2"}`)
	wantStatus(t, res, http.StatusOK)
	var got struct {
		Moved, Doubled int
		To             string
	}
	if err := json.Unmarshal([]byte(res.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Moved != 3 || got.Doubled != 0 || got.To != source {
		t.Fatalf("requeue answered %+v, want 3 moved to %s", got, source)
	}
	work, err := azqueue.NewQueueClientFromConnectionString(conn, source, &azqueue.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	n := int32(32)
	peek, err := work.PeekMessages(t.Context(), &azqueue.PeekMessagesOptions{NumberOfMessages: &n})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]int{}
	for _, m := range peek.Messages {
		bodies[*m.MessageText]++
	}
	if len(bodies) != 3 || bodies["order 1"] != 1 || bodies["order 2"] != 1 || bodies["order 3"] != 1 {
		t.Errorf("the work queue holds %v, want each order once", bodies)
	}
	list := viewer.call(http.MethodGet, "/api/v1/apps/"+demo.AppID+"/queues", "")
	if !strings.Contains(list.body, `"name":"`+source+`-poison","kind":"poison","source":"`+source+`","count":0`) {
		t.Errorf("the poison queue is not listed empty: %s", list.body)
	}
	entries, err := srv.App.Store.Audit.Recent(t.Context(), srv.Clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Action == "requeued" && e.Actor == "deploy-bot" && strings.Contains(e.Detail, "3 moved") && strings.Contains(e.Detail, "inventory fixed in 1.4.2") {
			found = true
		}
	}
	if !found {
		t.Errorf("no audit entry for the requeue: %+v", entries)
	}
}
