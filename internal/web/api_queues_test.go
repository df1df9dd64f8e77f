package web_test

import (
	"crypto/rand"
	"encoding/hex"
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
	srv, _, viewer := apiServer(t)
	conn := testenv.ConnectionString(t)
	if !strings.Contains(conn, "QueueEndpoint=") {
		t.Fatal("the test storage has no QueueEndpoint: start Azurite with scripts/azurite.sh")
	}
	wantStatus(t, viewer.call(http.MethodGet, "/api/v1/apps/"+demo.AppID+"/queues", ""), http.StatusNotFound) // no host storage yet
	if err := demo.SeedHostStorage(t.Context(), srv.App.Store, conn, srv.Clock.Now(), demo.HostSeed{}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	source := "q" + hex.EncodeToString(b)
	qc, err := azqueue.NewQueueClientFromConnectionString(conn, source+"-poison", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qc.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"order 1", "order 2"} {
		if _, err := qc.EnqueueMessage(t.Context(), body, nil); err != nil {
			t.Fatal(err)
		}
	}

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
