package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/apptest"
	"github.com/fusebox/fusebox/internal/circuit"
)

// BenchmarkTeamScope measures what the team check costs a person: a
// circuit's page and the circuit list (40 apps of 6 teams, 10 circuits
// each) for an admin, who skips it, and for a member of one team, whose
// request reads the named app's row and filters every list; beside them,
// one raw point read of an app row, the least the check can cost.
//
//	BENCH_ONLY="team scope" make bench
func BenchmarkTeamScope(b *testing.B) {
	teams := []string{"orders", "billing", "shipping", "search", "payments", "identity"}
	var members []string
	for _, t := range teams[1:] {
		members = append(members, t+":operator:g-"+t)
	}
	srv := apptest.StartRealClock(b, map[string]string{
		"FUSEBOX_LOCAL_USERS":  apptest.User(b, "olivia", "admin") + "," + apptest.User(b, "bianca", "operator@orders"),
		"FUSEBOX_TEAM_MEMBERS": strings.Join(members, ","),
	})
	ctx := context.Background()
	st := srv.App.Store
	settings := b.TempDir() + "/local.settings.json"
	if err := os.WriteFile(settings, []byte(`{"IsEncrypted": false, "Values": {}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	for i := range 40 {
		app := fmt.Sprintf("app-%02d", i)
		if err := st.Apps.Put(ctx, circuit.App{ID: app, Team: teams[i%len(teams)], Switch: circuit.SwitchLocal, LocalSettings: settings}); err != nil {
			b.Fatal(err)
		}
		for f := range 10 {
			if err := st.Circuits.Put(ctx, circuit.Circuit{AppID: app, Function: fmt.Sprintf("F%d", f), Settings: circuit.Settings{Threshold: 100, Window: 30 * time.Second}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	admin, member := signInAs(b, srv, "olivia"), signInAs(b, srv, "bianca")
	get := func(c *http.Client, path, want string) func() error {
		return func() error {
			resp, err := c.Get(srv.URL + path)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				return fmt.Errorf("%s: status %d, or %q missing", path, resp.StatusCode, want)
			}
			return nil
		}
	}
	raw := rawTable(b)
	if _, err := raw.UpsertEntity(ctx, []byte(`{"PartitionKey":"app","RowKey":"app-00","Team":"orders"}`), nil); err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		get  func() error
	}{
		{"circuit-page/admin", get(admin, "/circuits/app-00/F1", "F1")},
		{"circuit-page/member", get(member, "/circuits/app-00/F1", "F1")},
		{"circuit-list/admin", get(admin, "/circuits", "app-00")},
		{"circuit-list/member", get(member, "/circuits", "app-00")},
		{"raw-app-row-read", func() error {
			_, err := raw.GetEntity(ctx, "app", "app-00", &aztables.GetEntityOptions{})
			return err
		}},
	} {
		b.Run(m.name, func(b *testing.B) { measure(b, m.get) })
	}
}
