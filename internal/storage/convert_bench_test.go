package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/testenv"
)

// BenchmarkCircuitListAfterOneChange is what List adds, at 10,000
// circuits, when one row changed since the last list (every tick and page
// refresh while anything switches): the circuits as the pages and the
// evaluator get them, sorted. Beside it, in the same run, one plain
// aztables point read of a circuit row from Azurite (the raw store).
func BenchmarkCircuitListAfterOneChange(b *testing.B) {
	const n = 10_000
	c := &Circuits{cache: make(map[string]circuitRow, 2*n)}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range n {
		ci := circuit.Circuit{AppID: "orders", Function: fmt.Sprintf("F%05d", i), State: circuit.Closed, ChangedAt: at,
			Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Recipients: []string{"ops@example.com"}, EventHub: "orders"}}
		r := circuitRow{Meta: tablestore.Meta{PartitionKey: ci.AppID, RowKey: circuitKey(ci.Function), ETag: "v0"}, Incarnation: "i"}
		r.setSettings(ci)
		r.setState(ci)
		c.cache[r.PartitionKey+"/"+r.RowKey] = r
		a := actuationRowOf(ci, "i")
		c.cache[a.PartitionKey+"/"+a.RowKey] = circuitRow{Meta: tablestore.Meta{PartitionKey: a.PartitionKey, RowKey: a.RowKey, ETag: "v0"}, Incarnation: "i"}
	}
	c.convert()
	b.Run("fusebox", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			k := "orders/" + circuitKey(fmt.Sprintf("F%05d", i%n))
			r := c.cache[k]
			r.ETag = tablestore.ETag(fmt.Sprintf("v%d", i+1))
			c.cache[k] = r
			if got := c.convert(); len(got) != n {
				b.Fatalf("%d circuits", len(got))
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		svc, _ := testenv.Storage(b)
		if err := svc.CreateTable(b.Context(), TableCircuits); err != nil {
			b.Fatal(err)
		}
		ci := circuit.Circuit{AppID: "orders", Function: "F00000", State: circuit.Closed, ChangedAt: at,
			Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second, Recipients: []string{"ops@example.com"}, EventHub: "orders"}}
		if err := New(svc).Circuits.Create(b.Context(), ci); err != nil {
			b.Fatal(err)
		}
		raw, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		table := raw.NewClient(svc.TableName(TableCircuits))
		for b.Loop() {
			if _, err := table.GetEntity(b.Context(), "orders", circuitKey("F00000"), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
