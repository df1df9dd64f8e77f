package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fusebox/fusebox/internal/circuit"
	"github.com/fusebox/fusebox/internal/sealed"
	"github.com/fusebox/fusebox/internal/tablestore"
	"github.com/fusebox/fusebox/internal/teams"
)

// Apps holds the registered function apps, all in one partition: there are
// few, and the dashboard lists them all at once.
type Apps struct {
	table  *tablestore.Table
	faults *Faults
	box    *sealed.Box // seals HostStorage and EventHubs; nil: as given
}

const appsPartition = "app"

type appRow struct {
	tablestore.Meta
	DisplayName     string
	SubscriptionID  string
	ResourceGroup   string
	Site            string
	Slot            string
	Switch          string
	LocalSettings   string
	Linux           bool
	APIKeyHash      string  // SHA-256 (hex) of the app's failure-reporting key
	GuardrailMax    int32   // optional: at most this many circuits switched off automatically at once
	GuardrailShare  float64 // optional: at most this share (0, 1] of the app's circuits
	Channels        string  // comma-separated ids of the default alert channels
	EscalateTo      string  // comma-separated addresses and channel ids: the escalation of circuits that set none...
	EscalateSeconds int32   // ...after this long unacknowledged; 0: none
	HostingKind     string  // the site's kind when it was registered
	HostingPlan     string  // appservice, flex or containerapps; empty: not detected
	Environment     string  // the Container Apps environment's ARM id, as ARM said
	RollingUpdates  bool    // Flex: settings changes roll out instance by instance
	HostStorage     string  // the app's AzureWebJobsStorage: connection string or blob URL (a secret)
	HostID          string  // optional override of the derived host id
	InsightsAppID   string  // optional: the Application Insights resource's Application ID
	EventHubs       string  // Event Hubs connection string or namespace host, for lag (a secret)
	SetAsideLimit   int32   // optional: growth in an hour of a set-aside queue that is told
	ResumeFrom      string  // optional: the way back offered first (circuit.ResumeFrom…)
	Team            string  // the team that owns it; empty: admins' and roles held on every app
}

func (r *appRow) secrets() map[string]*string {
	return map[string]*string{"HostStorage": &r.HostStorage, "EventHubs": &r.EventHubs}
}

// open opens the row's sealed fields.
func (a *Apps) open(r appRow) (circuit.App, error) {
	if err := openSecrets(a.box, TableApps, &r); err != nil {
		return circuit.App{}, fmt.Errorf("storage: app %s: %w", r.RowKey, err)
	}
	return r.toApp()
}

func (r appRow) toApp() (circuit.App, error) {
	sw := circuit.SwitchKind(r.Switch)
	if sw != circuit.SwitchARM && sw != circuit.SwitchLocal && sw != circuit.SwitchContainerApp {
		return circuit.App{}, fmt.Errorf("storage: app %s: unknown switch %q", r.RowKey, r.Switch)
	}
	if r.SetAsideLimit < 0 {
		return circuit.App{}, fmt.Errorf("storage: app %s: SetAsideLimit %d must not be negative", r.RowKey, r.SetAsideLimit)
	}
	if r.InsightsAppID != "" && !circuit.ValidGUID(r.InsightsAppID) {
		// Written by hand: it would go into links on the pages. It costs
		// the app its links, not its circuits.
		r.InsightsAppID = ""
	}
	if r.Team != "" && !teams.ValidName(r.Team) {
		// Written by hand: the app is admins' until a team is named again.
		r.Team = ""
	}
	if r.GuardrailMax < 0 || r.GuardrailShare < 0 || r.GuardrailShare > 1 {
		return circuit.App{}, fmt.Errorf("storage: app %s: GuardrailMax %d must not be negative and GuardrailShare %v must be in [0, 1]", r.RowKey, r.GuardrailMax, r.GuardrailShare)
	}
	return circuit.App{
		ID: r.RowKey, DisplayName: r.DisplayName, SubscriptionID: r.SubscriptionID,
		ResourceGroup: r.ResourceGroup, Site: r.Site, Slot: r.Slot, Switch: sw, LocalSettings: r.LocalSettings,
		Linux: r.Linux, APIKeyHash: r.APIKeyHash, Guardrail: circuit.Guardrail{MaxOff: int(r.GuardrailMax), MaxShare: r.GuardrailShare},
		Channels:    commaList(r.Channels),
		Escalate:    circuit.Escalation{After: time.Duration(r.EscalateSeconds) * time.Second, To: commaList(r.EscalateTo)},
		HostStorage: r.HostStorage, HostID: r.HostID, InsightsAppID: r.InsightsAppID, EventHubs: r.EventHubs, SetAsideLimit: int(r.SetAsideLimit),
		ResumeFrom: resumeFrom(r.ResumeFrom), Team: r.Team,
		Hosting: circuit.Hosting{Kind: r.HostingKind, Plan: r.HostingPlan, Linux: r.Linux, RollingUpdates: r.RollingUpdates, Environment: r.Environment},
	}, nil
}

// List returns every app, ordered by id.
func (a *Apps) List(ctx context.Context) ([]circuit.App, error) {
	apps, faults, err := readRows[appRow](ctx, a.table, tablestore.Query{Filter: tablestore.PartitionIs(appsPartition)}, TableApps, a.open)
	if err != nil {
		return nil, fmt.Errorf("storage: list apps: %w", err)
	}
	a.faults.Replace(TableApps, faults)
	return apps, nil
}

// ErrNoApp is a lookup of an app that is not registered; it wraps
// circuit.ErrNotFound.
var ErrNoApp = circuit.ErrNoApp

// Get reads one app.
func (a *Apps) Get(ctx context.Context, id string) (circuit.App, error) {
	if !circuit.ValidAppID(id) {
		return circuit.App{}, fmt.Errorf("%w: %q", ErrNoApp, id)
	}
	var row appRow
	if err := a.table.Get(ctx, appsPartition, id, &row); err != nil {
		if errors.Is(err, tablestore.ErrNotFound) {
			return circuit.App{}, fmt.Errorf("%w: %s", ErrNoApp, id)
		}
		return circuit.App{}, fmt.Errorf("storage: get app %s: %w", id, err)
	}
	return a.open(row)
}

// Put creates or replaces an app's registration.
func (a *Apps) Put(ctx context.Context, app circuit.App) error {
	if err := a.table.Upsert(ctx, a.row(app)); err != nil {
		return fmt.Errorf("storage: put app %s: %w", app.ID, err)
	}
	return nil
}

// Create registers a new app; circuit.ErrConflict when its id is taken,
// even by a registration a moment ago on another instance.
func (a *Apps) Create(ctx context.Context, app circuit.App) error {
	err := a.table.Insert(ctx, a.row(app))
	if errors.Is(err, tablestore.ErrExists) {
		return fmt.Errorf("storage: create app %s: %w", app.ID, circuit.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("storage: create app %s: %w", app.ID, err)
	}
	return nil
}

func (a *Apps) row(app circuit.App) *appRow {
	row := &appRow{
		Meta:        tablestore.Meta{PartitionKey: appsPartition, RowKey: app.ID},
		DisplayName: app.DisplayName, SubscriptionID: app.SubscriptionID, ResourceGroup: app.ResourceGroup,
		Site: app.Site, Slot: app.Slot, Switch: string(app.Switch), LocalSettings: app.LocalSettings,
		Linux: app.Linux, APIKeyHash: app.APIKeyHash, GuardrailMax: int32(app.Guardrail.MaxOff), GuardrailShare: app.Guardrail.MaxShare,
		Channels:   strings.Join(app.Channels, ","),
		EscalateTo: strings.Join(app.Escalate.To, ","), EscalateSeconds: int32(app.Escalate.After / time.Second),
		HostStorage: app.HostStorage, HostID: app.HostID, InsightsAppID: app.InsightsAppID, EventHubs: app.EventHubs, SetAsideLimit: int32(min(app.SetAsideLimit, 1<<31-1)),
		ResumeFrom: app.ResumeFrom, Team: app.Team,
		HostingKind: app.Hosting.Kind, HostingPlan: app.Hosting.Plan, RollingUpdates: app.Hosting.RollingUpdates, Environment: app.Hosting.Environment,
	}
	sealSecrets(a.box, TableApps, row)
	return row
}

// Reseal seals the secrets of rows kept in plain text or under an older
// key, and returns how many it sealed.
func (a *Apps) Reseal(ctx context.Context) (int, error) {
	return reseal[appRow](ctx, a.box, a.table, tablestore.Query{Filter: tablestore.PartitionIs(appsPartition)}, TableApps)
}

// resumeFrom is a row's way back, or none when it names no way back (a
// row written by hand): it costs only which button comes first.
func resumeFrom(s string) string {
	if !circuit.ValidResumeFrom(s) {
		return ""
	}
	return s
}

// appTeam is the merge that moves an app to a team: only its Team column
// (a merge writes every string of its struct).
type appTeam struct {
	tablestore.Meta
	Team string
}

// SetTeam moves an app to team ("": admins' alone); circuit.ErrNoApp when
// there is no such app.
func (a *Apps) SetTeam(ctx context.Context, id, team string) error {
	err := a.table.Merge(ctx, &appTeam{Meta: tablestore.Meta{PartitionKey: appsPartition, RowKey: id, ETag: tablestore.AnyETag}, Team: team})
	if errors.Is(err, tablestore.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoApp, id)
	}
	return err
}

// An app's target (where its switch writes: a site and slot, a container
// app, a local settings file) belongs to one app: a row a target, keyed
// by a hash of funcapp.TargetKey, taken with a conditional insert so that
// two registrations of one target a moment apart cannot both succeed.
const targetPartition = "target"

type targetRow struct {
	tablestore.Meta
	AppID string
}

// claimGrace is how long a claim whose app is not registered is taken for
// a registration under way rather than one that died.
const claimGrace = time.Minute

func targetRowKey(target string) string {
	sum := sha256.Sum256([]byte(target))
	return hex.EncodeToString(sum[:16])
}

// ClaimTarget gives target to appID; circuit.ErrConflict when another
// app that is still registered holds it, or when another registration
// claimed it less than claimGrace ago (its app row is written just after
// its claim). A claim left by an app that is gone is taken over.
func (a *Apps) ClaimTarget(ctx context.Context, target, appID string) error {
	row := &targetRow{Meta: tablestore.Meta{PartitionKey: targetPartition, RowKey: targetRowKey(target)}, AppID: appID}
	err := a.table.Insert(ctx, row)
	if !errors.Is(err, tablestore.ErrExists) {
		return err
	}
	var held targetRow
	if err := a.table.Get(ctx, targetPartition, row.RowKey, &held); err != nil {
		return fmt.Errorf("storage: target of %s: %w", appID, err)
	}
	if held.AppID == appID {
		return nil
	}
	if _, err := a.Get(ctx, held.AppID); !errors.Is(err, ErrNoApp) {
		if err != nil {
			return err
		}
		return fmt.Errorf("storage: target of %s is %s's: %w", appID, held.AppID, circuit.ErrConflict)
	}
	if time.Since(held.Timestamp) < claimGrace {
		return fmt.Errorf("storage: target of %s is being registered for %s: %w", appID, held.AppID, circuit.ErrConflict)
	}
	row.ETag = held.ETag
	if err := a.table.Update(ctx, row); err != nil {
		if errors.Is(err, tablestore.ErrConflict) {
			return fmt.Errorf("storage: target of %s taken a moment ago: %w", appID, circuit.ErrConflict)
		}
		return err
	}
	return nil
}

// ReleaseTarget gives up appID's claim on target, if it holds it.
func (a *Apps) ReleaseTarget(ctx context.Context, target, appID string) error {
	var held targetRow
	err := a.table.Get(ctx, targetPartition, targetRowKey(target), &held)
	if errors.Is(err, tablestore.ErrNotFound) || (err == nil && held.AppID != appID) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := a.table.Delete(ctx, targetPartition, held.RowKey, held.ETag); err != nil && !errors.Is(err, tablestore.ErrNotFound) && !errors.Is(err, tablestore.ErrConflict) {
		return err
	}
	return nil
}
