package storage_test

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/fusebox/fusebox/internal/alerts"
	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/storage"
	"github.com/fusebox/fusebox/internal/testenv"
)

// Secrets of apps and channels are sealed in the table, read back as
// given, and rows written before sealing are sealed at the next start
// (Reseal) without losing what they hold.
func TestSecretsAreSealedAtRest(t *testing.T) {
	svc, _ := testenv.Storage(t)
	for _, table := range []string{storage.TableApps, storage.TableChannels} {
		if err := svc.CreateTable(t.Context(), table); err != nil {
			t.Fatal(err)
		}
	}
	conn := "DefaultEndpointsProtocol=https;AccountName=orders;AccountKey=SECRETACCOUNTKEY"
	hook := "https://hooks.example.com/SECRETPATH"

	// Written before sealing: as given.
	before := storage.New(svc)
	if err := before.Apps.Put(t.Context(), circuit.App{ID: "orders", Switch: circuit.SwitchLocal, LocalSettings: "/x", HostStorage: conn, EventHubs: "orders.servicebus.windows.net"}); err != nil {
		t.Fatal(err)
	}
	if err := before.Channels.Create(t.Context(), alerts.Channel{ID: "hook", Name: "Hook", Kind: alerts.ChannelWebhook, URL: hook, Secret: alerts.NewWebhookSecret()}); err != nil {
		t.Fatal(err)
	}
	// raw is what someone who reads the tables sees.
	raw := func() string {
		var b strings.Builder
		for _, table := range []string{storage.TableApps, storage.TableChannels} {
			sc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(t), &aztables.ClientOptions{ClientOptions: testenv.Bounded()})
			if err != nil {
				t.Fatal(err)
			}
			p := sc.NewClient(svc.TableName(table)).NewListEntitiesPager(nil)
			for p.More() {
				page, err := p.NextPage(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range page.Entities {
					b.Write(e)
				}
			}
		}
		return b.String()
	}
	if s := raw(); !strings.Contains(s, "SECRETACCOUNTKEY") || !strings.Contains(s, "SECRETPATH") {
		t.Fatal("the rows written before sealing do not hold the plaintext: the test reads the wrong rows")
	}

	box, err := sealed.New(sealed.Key{ID: "k1", Secret: []byte("a-secrets-key-0123456789abcdef012345")})
	if err != nil {
		t.Fatal(err)
	}
	after := storage.New(svc)
	after.UseSecrets(box)
	apps, err := after.Apps.Reseal(t.Context())
	if err != nil || apps != 1 {
		t.Fatalf("resealed %d apps, %v", apps, err)
	}
	channels, err := after.Channels.Reseal(t.Context())
	if err != nil || channels != 1 {
		t.Fatalf("resealed %d channels, %v", channels, err)
	}
	if s := raw(); strings.Contains(s, "SECRETACCOUNTKEY") || strings.Contains(s, "SECRETPATH") || strings.Contains(s, "whsec_") || !strings.Contains(s, "sealed:v1:k1:") {
		t.Errorf("the tables still hold secrets in plain text:\n%s", s)
	}
	app, err := after.Apps.Get(t.Context(), "orders")
	if err != nil || app.HostStorage != conn || app.EventHubs != "orders.servicebus.windows.net" {
		t.Errorf("app read back: %+v, %v", app, err)
	}
	ch, err := after.Channels.Get(t.Context(), "hook")
	if err != nil || ch.URL != hook || !strings.HasPrefix(ch.Secret, "whsec_") {
		t.Errorf("channel read back: %+v, %v", ch, err)
	}
	if n, _ := after.Apps.Reseal(t.Context()); n != 0 {
		t.Errorf("a second reseal sealed %d apps again", n)
	}

	// Without the key, a sealed row is a bad row, named, not a crash.
	if _, err := before.Apps.Get(t.Context(), "orders"); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("read without the key: %v", err)
	}
}
