package demo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/fusebox/fusebox/internal/demo"
	"github.com/fusebox/fusebox/internal/hostinsight"
	"github.com/fusebox/fusebox/internal/testenv"
)

// A demo left stopped for longer than its hub's retention resumes at the
// first event the hub still holds, as a real host would (it asks for the
// events after its checkpoint, and the older ones are gone); the hub says
// where that is, so Fusebox's pages count the expired events.
func TestAHostStoppedPastRetentionResumesAtTheFirstEventHeld(t *testing.T) {
	bc, err := azblob.NewClientFromConnectionString(testenv.ConnectionString(t), &azblob.ClientOptions{ClientOptions: testenv.Bounded()})
	if err != nil {
		t.Fatal(err)
	}
	tag := testenv.Prefix(t)
	settings := filepath.Join(t.TempDir(), "local.settings.json")
	if err := os.WriteFile(settings, []byte(`{"IsEncrypted":false,"Values":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var processed []int64
	h := &demo.Host{Settings: settings, Function: "ProcessOrders", Blob: bc, HostID: tag, Namespace: tag + ".servicebus.windows.net",
		EventHub: "orders", Group: "$default", Partitions: 1, Rate: 1, Epoch: now.Add(-2 * time.Hour), Retention: time.Hour, Batch: 10,
		Processed: func(_ int, seq int64) { processed = append(processed, seq) }}
	if err := h.Start(t.Context()); err != nil { // creates the host's containers
		t.Fatal(err)
	}
	// Its last checkpoint is from two hours ago, at sequence 10.
	seq := "10"
	if _, err := bc.UploadBuffer(t.Context(), hostinsight.EventHubContainer, tag+".servicebus.windows.net/orders/$default/checkpoint/0", nil,
		&azblob.UploadBufferOptions{Metadata: map[string]*string{"sequencenumber": &seq}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(t.Context()); err != nil { // read the checkpoint, as a restarted host does
		t.Fatal(err)
	}
	first := h.Stream().First(now)
	if first < 3599 || first > 3601 {
		t.Fatalf("an hour's retention at 1 event/s, two hours in: first held = %d, want about 3600", first)
	}
	if err := h.Step(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if len(processed) == 0 || processed[0] != first {
		t.Errorf("after a checkpoint at 10, the host processed %v first, want %d, the first event held", processed[:min(len(processed), 3)], first)
	}
	part, ok := h.Stream().Served().Partition(context.Background(), "orders", "0")
	if !ok || part.First < first || part.First > first+2 {
		t.Fatalf("the hub says partition 0 starts at %d (ok %v), want about %d", part.First, ok, first)
	}
	_, expired, _ := hostinsight.Behind(hostinsight.Checkpoint{Sequence: 10, HasSequence: true}, hostinsight.Head{First: part.First, Last: part.Last})
	if expired != part.First-11 {
		t.Errorf("Fusebox counts %d expired behind the checkpoint, want %d", expired, part.First-11)
	}
}
